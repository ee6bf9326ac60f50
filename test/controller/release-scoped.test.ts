/**
 * Two releases in one namespace (docs/helm.md, "Leader election, watches, probes"): each
 * controller holds its own Lease (TINTYPE_CONTROLLER_LEASE) and reconciles its own pool
 * (TINTYPE_CONTROLLER_POOL), never the other release's.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { createController, createKubeApi, httpStateReader, loadKubeConfig } from '../../controller/index.ts';
import { createLogger } from '../../lib/log.ts';
import { Registry } from '../../lib/metrics.ts';
import { startFakeApiServer, writeKubeconfig } from './fake-apiserver.ts';
import { POD_LABELS } from './fake-pods.ts';

const NS = 'render';

t.test('a controller leads under its own Lease and writes its own pool only', async (t) => {
  const server = await startFakeApiServer();
  const dir = await mkdtemp(path.join(os.tmpdir(), 'tintype-controller-scoped-'));
  t.teardown(async () => {
    await server.close();
    await rm(dir, { recursive: true, force: true });
  });
  const kubeconfig = path.join(dir, 'kubeconfig');
  await writeKubeconfig(kubeconfig, server, NS);
  for (const r of ['a', 'b']) {
    server.apply('deployments', NS, {
      metadata: { name: `${r}-renderer` },
      spec: { replicas: 1, selector: { matchLabels: { ...POD_LABELS, release: r } }, template: { metadata: { labels: { ...POD_LABELS, release: r } } } },
      status: { replicas: 1 },
    });
    server.apply('renderpools', NS, { metadata: { name: `${r}-renderers` }, spec: { deploymentName: `${r}-renderer` } });
  }
  const api = createKubeApi(loadKubeConfig({ kubeconfig, inCluster: false }));
  const controller = createController({
    api, namespace: NS, leaseNamespace: NS, leaseName: 'a-controller', pool: 'a-renderers', identity: 'a-0', pollMs: 5_000,
    readState: httpStateReader(2_000), logger: createLogger('controller-test', { level: 'error' }),
    registry: new Registry(), timers: false, backoff: { initialMs: 10, maxMs: 50 },
  });
  await controller.start();
  t.teardown(() => controller.stop());
  for (let i = 0; i < 500 && !controller.synced(); i++) await new Promise((r) => setTimeout(r, 10));
  await controller.leader.tick();
  await controller.reconcile();
  t.equal(server.get('leases', NS, 'a-controller')?.spec?.holderIdentity, 'a-0', 'its own Lease');
  t.notOk(server.get('leases', NS, 'tintype-controller'), 'not the shared default');
  t.ok(server.get('renderpools', NS, 'a-renderers').status, 'its pool is reported on');
  t.notOk(server.get('renderpools', NS, 'b-renderers').status, "the other release's pool is left alone");
});
