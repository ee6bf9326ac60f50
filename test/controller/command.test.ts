/**
 * `tintype controller` as a process: it runs (no longer "not built"), takes its credentials from
 * KUBECONFIG, holds the Lease as POD_NAME in POD_NAMESPACE, answers its probes and metrics on
 * the admin port, scales a pool, and on SIGTERM releases the Lease and exits 0. A bad setting
 * stops it with a message naming the variable.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { startFakeApiServer, writeKubeconfig } from './fake-apiserver.ts';
import { POD_LABELS, startFakeRenderer } from './fake-pods.ts';
import { spawnTintype } from '../tintype.ts';

async function until(what: string, cond: () => boolean | Promise<boolean>): Promise<void> {
  // Generous: a process start on a loaded 2-core machine can take tens of seconds.
  for (let i = 0; i < 2_400; i++) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

t.test('runs, leads, scales, and releases the Lease on SIGTERM', async (t) => {
  const server = await startFakeApiServer();
  const pod = await startFakeRenderer('renderer-0', '127.0.0.41');
  const dir = await mkdtemp(path.join(os.tmpdir(), 'tintype-controller-cmd-'));
  t.teardown(async () => {
    await pod.close();
    await server.close();
    await rm(dir, { recursive: true, force: true });
  });
  const kubeconfig = path.join(dir, 'kubeconfig');
  await writeKubeconfig(kubeconfig, server);
  server.apply('deployments', 'render', { metadata: { name: 'renderer' }, spec: { replicas: 1, selector: { matchLabels: POD_LABELS } }, status: { replicas: 1 } });
  server.apply('renderpools', 'render', { metadata: { name: 'pool' }, spec: { deploymentName: 'renderer' } });
  pod.state = { ...pod.state, busy: 2, busyMean: 2 };
  server.apply('pods', 'render', pod.pod());

  const { child, lines, exited } = spawnTintype('controller', {
    KUBECONFIG: kubeconfig, POD_NAMESPACE: 'ops', POD_NAME: 'controller-0', TINTYPE_CONTROLLER_NAMESPACE: 'render',
    TINTYPE_CONTROLLER_POLL_MS: '200', TINTYPE_ADMIN_PORT: '0',
  });
  t.teardown(() => void child.kill('SIGKILL'));
  await until('the start line', () => lines.some((l) => l.event === 'controller.started'));
  const admin = `http://127.0.0.1:${lines.find((l) => l.event === 'controller.started').admin_port}`;
  t.equal((await fetch(`${admin}/healthz/live`)).status, 200);
  await until('ready', async () => (await fetch(`${admin}/healthz/ready`)).status === 200);
  await until('the Lease', () => server.get('leases', 'ops', 'tintype-controller')?.spec?.holderIdentity === 'controller-0');
  await until('the scale up', () => server.get('deployments', 'render', 'renderer').spec.replicas === 2);
  t.pass('scaled 1 -> 2 on two slots busy on average');
  const metrics = await (await fetch(`${admin}/metrics`)).text();
  t.match(metrics, /tintype_controller_leader 1/);
  t.match(metrics, /tintype_controller_scales_total\{direction="up"\} 1/);

  child.kill('SIGTERM');
  t.equal(await exited, 0, 'exits 0 on SIGTERM');
  t.equal(server.get('leases', 'ops', 'tintype-controller').spec.holderIdentity, undefined, 'the Lease is released');
});

t.test('a bad setting stops it with the variable named', async (t) => {
  const { lines, exited } = spawnTintype('controller', { TINTYPE_CONTROLLER_POLL_MS: 'often' });
  t.equal(await exited, 1);
  t.ok(lines.some((l) => /TINTYPE_CONTROLLER_POLL_MS/.test(l.text ?? '')));
});

t.test('no credentials: says what to set', async (t) => {
  const { lines, exited } = spawnTintype('controller', {});
  t.equal(await exited, 1);
  t.ok(lines.some((l) => /KUBECONFIG/.test(l.text ?? '')), 'names KUBECONFIG');
});
