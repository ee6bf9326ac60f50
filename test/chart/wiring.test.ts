/**
 * The chart's wiring runs: the Deployments `helm template` renders (the defaults, with a values
 * file that points DATABASE_URL at this machine's PostgreSQL, in a fresh database, and REDIS_URL
 * at its Redis, in a database index of its own) are started as a kubelet would start them: each
 * tintype role with exactly what its container runs (the Dockerfile's ENTRYPOINT, tini in front
 * of `tintype`, with the container's arguments; tini itself only where this machine has it), its
 * environment (the image's ENV, then the container's, Secrets resolved from the render) and
 * ports, in a network namespace of its own with a private /tmp (its emptyDir), Service names
 * resolving to the pods' addresses, and only the connections the rendered NetworkPolicies allow
 * (wiring/pod-net.ts). Envoy cannot run here: its stand-in is the embedded edge configured from
 * the rendered bootstrap (wiring/edge.ts).
 * PostgreSQL and Redis are reached through pods of their own (relays to the machine's), with the
 * labels the chart's default NetworkPolicy selectors name.
 *
 * Then, as NOTES.txt says: the first key made in the policy pod, `/v1/ping` and one html-to-image
 * render through the edge; and what each setting names was reached: the ledger is in the fresh
 * PostgreSQL database (DATABASE_URL), the renderer settled there (TINTYPE_POLICY_URL), the render
 * is in Redis (REDIS_URL), the renderer's self-test went through the guard pod (GUARD_URL), in
 * `pod` isolation, with the slots the values set; usage reads on policy's admin port. A name the
 * chart misspells leaves one of these unreached (test/chart/wiring-config.test.ts also checks
 * every name against the code).
 *
 * The default values run no controller (controller.enabled is false), so no controller pod runs.
 * One pod per Deployment: replicas add nothing to the wiring.
 *
 * Last, a rolling restart of policy, the renderer and the guard under steady pings and renders
 * through the edge (docs/helm.md "Rolling restarts"): each Deployment's new pod joins the network
 * with an address of its own and, once ready, its Services' endpoints; the old pod leaves them and
 * is stopped as its rendered preStop and grace period say (rollout/traffic.ts kubeletStop). No
 * answer but 200 or 503 busy with retry-after, no render but 200, and the ledger meters exactly
 * the 200s delivered. test/chart/rollout.test.ts proves the same on one machine, with controls.
 */
import { execFile, execFileSync, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import { asPgAdmin } from '../lib/pg-admin.ts';
import t from 'tap';
import { NAMESPACE, ROOT, render, type K8sObject } from '../helm.ts';
import { openPaths as openPathsBetween, type Endpoint } from './network-policy-eval.ts';
import { createPodNet, podNetAddresses, type Path, type PodNet } from './wiring/pod-net.ts';
import { tintypeImageConfigs } from './tintype-image.ts';
import { podPlans, projectConfigMaps, containerEnv, type PodPlan } from './wiring/pods.ts';
import { browserContainerArgv, compileLauncher, emptyDirFor, mountLines, PROBE, type VolumeMount } from './wiring/browser-container.ts';
import { processTree } from '../../renderer/browser/process-tree.ts';
import { CLAIM_PATH, LEASE_HEADER, SETTLE_PATH } from '../../lib/policy-contract.ts';
import { DEFAULT_POLICY_SETTLE_PORT } from '../../policy/server.ts';
import { runMigrationJob } from './wiring/migrate.ts';
import { connectFrom, podProcesses, RELAY_JS, tintypeArgv, type Proc } from './wiring/pod-process.ts';
import { ADMIN_SOCKET_NAME, METRICS_PATH, READY_PATH } from '../../lib/admin.ts';
import { STATE_PATH } from '../../lib/state-contract.ts';
import { RATELIMIT_LIMIT_HEADER } from '../../lib/policy-contract.ts';
import { TEST_LEASE_ENV } from '../lib/leases.ts';
import { BLOCKED_HEADER, CACHE_HEADER } from '../../renderer/server/answer-headers.ts';
import { call as send, isBusy, kubeletStop, steady, type Answer, type Container, type Stopped } from './rollout/traffic.ts';

/* eslint-disable @typescript-eslint/no-explicit-any */

// Five processes and a Chromium start on a shared machine, then three more in the rolling restart,
// with three drain waits; the test's own waits are bounded below.
t.setTimeout(600_000);

const ID = 1 + (process.pid % 250);
const REDIS = { host: '127.0.0.1', port: 6379 };
/** The Redis database index this test's renders are cached in (emptied before and after): one of 5–9 by the run, so two checkouts testing at once on one machine rarely share one (test/e2e/apart.ts takes 10–14). */
const REDIS_DB = 5 + (ID % 5);
const DB = `tintype_wiring_${process.pid}_${randomBytes(3).toString('hex')}`;
const HERE = { 'kubernetes.io/metadata.name': NAMESPACE };
/** The stand-ins' labels: the chart's default NetworkPolicy selectors (values networkPolicy.postgres, .redis). */
const BACKENDS = {
  postgresql: { labels: { 'app.kubernetes.io/name': 'postgresql' }, port: 5432, host: '127.0.0.1', hostPort: 5432 },
  redis: { labels: { 'app.kubernetes.io/name': 'redis' }, port: 6379, host: REDIS.host, hostPort: REDIS.port },
} as const;
/** How often one caller starts a call in the rolling restart: 150 a minute, under the scale plan's 240. */
const TRAFFIC_PERIOD_MS = 400;
/** How long before its answer an overload that shed a render was logged: a check or claim gives up within Envoy's ext_authz 2 s. */
const SHED_WINDOW_MS = 5_000;
/** How long a pod may take to pass its readiness probe (Chromium's start and self-test included). */
const READY_WITHIN_MS = 180_000;
/**
 * How long a ready new renderer may wait for its first render: the edge's DNS refresh (5 s) and
 * first health check, then its share of the traffic (hosts equally busy are taken at random).
 */
const NEW_RENDERER_SERVES_WITHIN_MS = 60_000;
const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47]);
// Outside /tmp: each pod mounts a /tmp of its own, and must still see the `tintype` link, the
// projected volumes and the backends' sockets here.
const dir = mkdtempSync('/var/tmp/tintype-wiring-');
/**
 * Where each pod sees this checkout, as the image has its application at /app: the checkout is
 * bound here in the pod's own mount namespace before its /tmp is, so a checkout under /tmp (which
 * the pod's /tmp hides) runs as well as one anywhere else.
 */
const APP = path.join(dir, 'app');
/** A path of this checkout (or anything under it, such as a Node from its packages) as a pod sees it. */
const inPod = (p: string): string => (p === ROOT || p.startsWith(ROOT + path.sep) ? APP + p.slice(ROOT.length) : p);
const podProcs = podProcesses(ROOT, APP);
const { procs, track } = podProcs;
const runInPod = podProcs.run;
let podNet: PodNet | undefined;
let dbMade = false;
let objects: K8sObject[] = [];
let plans: PodPlan[] = [];
const byRole = (role: string): PodPlan => {
  const p = plans.find((x) => x.component === role);
  if (p === undefined) throw new Error(`no ${role} Deployment`);
  return p;
};

/** A pod's private /tmp, as its emptyDir. */
function podTmp(name: string): string {
  const d = path.join(dir, 'pods', name);
  mkdirSync(d, { recursive: true, mode: 0o1777 });
  return d;
}

/** GET from the node (the machine): kubelet probes and an operator's port-forward come from there. */
function get(host: string, port: number, p: string, localAddress?: string, timeoutMs?: number): Promise<{ status: number; body: Buffer; headers: http.IncomingHttpHeaders }> {
  return request({ host, port, path: p, method: 'GET', localAddress, timeoutMs });
}

function request(o: { host: string; port: number; path: string; method: string; headers?: Record<string, string>; body?: string; localAddress?: string | undefined; timeoutMs?: number | undefined }): Promise<{ status: number; body: Buffer; headers: http.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: o.host, port: o.port, path: o.path, method: o.method, headers: o.headers, agent: false, timeout: o.timeoutMs ?? 60_000,
      ...(o.localAddress === undefined ? {} : { localAddress: o.localAddress }) }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, body: Buffer.concat(chunks), headers: res.headers }));
      res.on('error', reject);
    });
    req.once('timeout', () => req.destroy(new Error('timeout')));
    req.once('error', reject);
    req.end(o.body);
  });
}

/** Waits until a pod's readiness probe answers 200, as the kubelet probes it; fails when the process ends first. */
async function ready(plan: PodPlan, proc: Proc, pod = plan.component): Promise<void> {
  const { path: p, port } = plan.probe('readinessProbe');
  const deadline = Date.now() + READY_WITHIN_MS;
  let ended = false;
  void proc.exited.then(() => { ended = true; });
  for (;;) {
    if (ended) throw new Error(`${plan.deployment} exited before it was ready:\n${proc.output().slice(-3000)}`);
    const r = await get(podNet!.addr(pod), port, p, undefined, 2_000).catch(() => undefined);
    if (r?.status === 200) return;
    if (Date.now() > deadline) throw new Error(`${plan.deployment}: ${p} on ${port} not ready within ${READY_WITHIN_MS} ms:\n${proc.output().slice(-3000)}`);
    await new Promise((r2) => setTimeout(r2, 250));
  }
}

/** GET 127.0.0.1:`port` from inside network namespace `ns`, as `kubectl port-forward` arrives in a pod. */
async function getInPod(ns: string, port: number, p: string): Promise<{ status: number; body: Buffer }> {
  const code = "require('http').get({host:'127.0.0.1',port:+process.argv[1],path:process.argv[2]},(r)=>{const c=[];r.on('data',(d)=>c.push(d));" +
    "r.on('end',()=>console.log(JSON.stringify({status:r.statusCode,body:Buffer.concat(c).toString('base64')})))})";
  const stdout = await new Promise<string>((resolve, reject) => {
    execFile('ip', ['netns', 'exec', ns, 'node', '-e', code, String(port), p], { encoding: 'utf8' }, (err, out) => err === null ? resolve(out) : reject(err));
  });
  const got = JSON.parse(stdout) as { status: number; body: string };
  return { status: got.status, body: Buffer.from(got.body, 'base64') };
}

/** GET on the admin socket policy keeps in its data directory (/tmp/tintype, in pod `pod`'s emptyDir), as `kubectl exec` reaches it. */
function getOnAdminSocket(pod: string, p: string): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ socketPath: path.join(podTmp(pod), 'tintype', ADMIN_SOCKET_NAME), path: p }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
    });
    req.once('error', reject);
    req.end();
  });
}

/** Each pod's labels and the ports it listens on, a rollout's new pods included. */
const podLabels: Record<string, Record<string, string>> = {};
const podPorts: Record<string, number[]> = {};
/** The pods' PATH: `tintype` as the image links it, and Node. */
const PATH = `${path.join(dir, 'bin')}:${inPod(path.dirname(process.execPath))}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`;
/** The browser image's launcher, compiled once. */
let launcher = '';
/** The Deployments' plans for a second pod (its own name), as a rollout starts it. */
let nextPlans: PodPlan[] = [];

/** Whether a Service's selector picks pod `p`. */
const selects = (service: any, p: string): boolean => Object.entries(service.spec.selector ?? {}).every(([k, v]) => podLabels[p]![k] === v);

/**
 * The paths the rendered NetworkPolicies open between `pods` (and from a client outside the
 * cluster), on every port listened on; with `only`, the paths it is an end of.
 */
function openPaths(pods: string[], only?: string): Path[] {
  const addresses = podNetAddresses(ID, pods);
  const endpoints: Record<string, Endpoint> = { client: { ip: addresses.clientAddr } };
  for (const p of pods) endpoints[p] = { labels: podLabels[p]!, namespace: HERE, ip: addresses.addr(p) };
  return openPathsBetween(objects.filter((o) => o.kind === 'NetworkPolicy'), HERE, endpoints, Object.fromEntries(pods.map((p) => [p, podPorts[p]!])), only);
}

/** How a pod's processes are named: its Deployment's, and a rollout's new pod apart. */
const podName = (plan: PodPlan, pod: string): string => (pod === plan.component ? plan.deployment : `${plan.deployment} (${pod})`);

/** A tintype pod of a Deployment, `pod` on the network: its container as the plan runs it. */
function startPod(plan: PodPlan, pod = plan.component): Proc {
  return runInPod(podName(plan, pod), podNet!.ns(pod), podTmp(pod), { ...plan.env, PATH }, tintypeArgv(plan));
}

/**
 * A renderer pod's two containers: the browser's (the launcher, Chromium) and the renderer's,
 * sharing the pod's network and the socket's emptyDir, nothing else.
 */
async function startRendererPod(plan: PodPlan, pod = plan.component, k8sName = `${plan.deployment}-0`): Promise<{ renderer: Proc; browser: Proc }> {
  const n = podNet!;
  const browser: any = plan.pod.containers.find((c: any) => c.name === 'browser');
  browserUid = browser.securityContext.runAsUser;
  const volumeDir = (volume: string, owner?: number): string => emptyDirFor(dir, pod, volume, owner);
  const podMounts = (c: any, owner?: number): VolumeMount[] => (c.volumeMounts ?? [])
    .filter((m: any) => m.mountPath !== '/dev/shm' && (c !== plan.container || m.mountPath !== '/tmp'))
    .map((m: any) => ({ dir: volumeDir(m.name, owner), mountPath: m.mountPath }));
  const browserArgv = browserContainerArgv({
    ns: n.ns(pod),
    uid: browserUid,
    mounts: podMounts(browser, browserUid),
    masked: [dir, ROOT],
    launcher,
    env: { PATH: '/usr/local/bin:/usr/bin:/bin', ...containerEnv(browser, objects, { namespace: NAMESPACE, podName: k8sName, podIP: '' }) },
  });
  const name = podName(plan, pod);
  const browserContainer = track(`${name} browser container`, spawn(browserArgv[0]!, browserArgv.slice(1), { detached: true, stdio: ['ignore', 'pipe', 'pipe'] }));
  await browserContainer.waitFor(/"launcher\.listening"/);
  const renderer = runInPod(name, n.ns(pod), podTmp(pod), { ...plan.env, PATH },
    ['sh', '-c', `${mountLines(podMounts(plan.container)).join(' && ')} && exec "$@"`, 'sh', ...tintypeArgv(plan)]);
  return { renderer, browser: browserContainer };
}

/** A key made as NOTES.txt makes it (`kubectl exec deployment/…-policy -- tintype keys create`): in the policy pod, with its environment. */
async function createKey(plan: string, name: string): Promise<{ key: string; keyId: string }> {
  const made = runInPod('keys create', podNet!.ns('policy'), podTmp('policy'), { ...byRole('policy').env, PATH }, ['tintype', 'keys', 'create', '--plan', plan, '--name', name]);
  const code = await made.exited;
  if (code !== 0) throw new Error(`tintype keys create in the policy pod exited ${code}:\n${made.output()}`);
  const out = { key: /^secret: (\S+)$/m.exec(made.output())?.[1] ?? '', keyId: /^id: (\S+)$/m.exec(made.output())?.[1] ?? '' };
  if (out.key === '' || out.keyId === '') throw new Error('tintype keys create printed no id and secret');
  return out;
}

/** One step of the clean-up: a failure is reported and the next step still runs. */
async function step(what: string, fn: () => unknown): Promise<void> {
  try {
    await fn();
  } catch (err) {
    process.stderr.write(`wiring clean-up: ${what}: ${err instanceof Error ? err.message : String(err)}\n`);
  }
}

t.teardown(async () => {
  await step('processes', podProcs.stopAll);
  const n = podNet;
  if (n !== undefined) {
    // Anything still in a pod's namespace (a Chromium left by a killed renderer) is ours: it goes too.
    await step('leftover processes', () => {
      for (const pod of n.pods()) {
        let pids: string[] = [];
        try { pids = execFileSync('ip', ['netns', 'pids', n.ns(pod)], { encoding: 'utf8' }).split('\n').filter(Boolean); } catch { /* no such namespace */ }
        for (const pid of pids) {
          try { process.kill(Number(pid), 'SIGKILL'); } catch { /* gone */ }
        }
      }
    });
    await step('network', () => n.destroy());
  }
  if (dbMade) {
    await step('database', () => asPgAdmin(`DROP DATABASE IF EXISTS ${DB} WITH (FORCE)`));
  }
  await step('redis', async () => {
    const redis = new Redis({ ...REDIS, db: REDIS_DB, lazyConnect: true });
    try { await redis.connect(); await redis.flushdb(); } finally { redis.disconnect(); }
  });
  await step('files', () => rmSync(dir, { recursive: true, force: true }));
});

let key = '';
let keyId = '';
/** The release's secrets: what the browser container must find nowhere. */
const SECRETS = {
  databaseUrl: `postgres://postgres@postgresql:${BACKENDS.postgresql.port}/${DB}`,
  redisUrl: `redis://redis:${BACKENDS.redis.port}/${REDIS_DB}`,
  leaseSigningKey: TEST_LEASE_ENV.TINTYPE_LEASE_SIGNING_KEY,
  guardTokenKey: TEST_LEASE_ENV.GUARD_TOKEN_KEY,
  rendererToken: TEST_LEASE_ENV.TINTYPE_RENDERER_TOKEN,
};
/** Whether the browser container's uid can make the user namespaces Chromium's sandbox needs on this machine. */
const SANDBOX_HERE = spawnSync('setpriv', ['--reuid=10002', '--regid=10002', '--clear-groups', 'unshare', '--user', 'true']).status === 0;
/** The browser container's process (its launcher), and the uid it runs as. */
let browserProc: Proc | undefined;
let browserUid = 0;

t.before(async () => {
  await asPgAdmin(`CREATE DATABASE ${DB}`);
  dbMade = true;
  const redis = new Redis({ ...REDIS, db: REDIS_DB, lazyConnect: true });
  await redis.connect();
  await redis.flushdb();
  redis.disconnect();

  // The release's secrets: this machine's PostgreSQL and Redis, behind the names a cluster gives them.
  const values = path.join(dir, 'wiring-values.yaml');
  writeFileSync(values, [
    'secrets:',
    `  databaseUrl: ${SECRETS.databaseUrl}`,
    `  redisUrl: ${SECRETS.redisUrl}`,
    `  leaseSigningKey: ${SECRETS.leaseSigningKey}`,
    `  leasePublicKeys: ${TEST_LEASE_ENV.TINTYPE_LEASE_PUBLIC_KEYS}`,
    `  guardTokenKey: ${SECRETS.guardTokenKey}`,
    `  rendererToken: ${SECRETS.rendererToken}`,
    // Not the default, so the renderer's /state shows the value reached it.
    'renderer:',
    '  slots: 1',
    '',
  ].join('\n'));
  objects = await render('default-values.yaml', ['-f', values]);
  const images = tintypeImageConfigs(path.join(ROOT, 'Dockerfile'), 'default-values.yaml', ['-f', values]);
  plans = podPlans(objects, images, (d) => ({ namespace: NAMESPACE, podName: `${d}-0`, podIP: '' }));
  nextPlans = podPlans(objects, images, (d) => ({ namespace: NAMESPACE, podName: `${d}-1`, podIP: '' }));

  // The pods: each Deployment's, and the two backends'.
  Object.assign(podLabels, Object.fromEntries(plans.map((p) => [p.component, p.labels])), {
    postgresql: BACKENDS.postgresql.labels,
    redis: BACKENDS.redis.labels,
  });
  Object.assign(podPorts, Object.fromEntries(plans.map((p) => [p.component, Object.values(p.ports)])), {
    postgresql: [BACKENDS.postgresql.port],
    redis: [BACKENDS.redis.port],
  });
  const pods = Object.keys(podLabels);
  // Service names: each rendered Service resolves to the pods its selector picks; the backends'
  // names are the hosts of the URLs the Secret holds.
  const hosts: Record<string, string[]> = { postgresql: ['postgresql'], redis: ['redis'] };
  for (const s of objects.filter((o) => o.kind === 'Service') as any[]) {
    const pod = pods.find((p) => selects(s, p));
    if (pod !== undefined) hosts[s.metadata.name] = [pod];
  }
  podNet = createPodNet(ID, pods, hosts, openPaths(pods));
  const pn = podNet;

  // `tintype` on the PATH, as the image links it.
  const bin = path.join(dir, 'bin');
  mkdirSync(bin);
  mkdirSync(APP);
  symlinkSync(path.join(APP, 'bin/tintype'), path.join(bin, 'tintype'));

  for (const [name, b] of Object.entries(BACKENDS)) {
    const sock = path.join(dir, `${name}.sock`);
    await podProcs.relay(sock, b.host, b.hostPort);
    runInPod(name, pn.ns(name), podTmp(name), { PATH }, ['node', '-e', RELAY_JS, pn.addr(name), String(b.port), sock]);
  }
  await Promise.all(procs.map((p) => p.waitFor(/relay\.ready/)));

  // The pre-install hook Job first, as Helm runs it: `tintype migrate` with its own environment
  // (policy waits for the schema). Run where its NetworkPolicy lets it reach PostgreSQL: policy's pod.
  await runMigrationJob(objects, (env, argv) => runInPod('migrate', pn.ns('policy'), podTmp('migrate'), { ...env, PATH }, argv));
  const guard = startPod(byRole('guard'));
  const policy = startPod(byRole('policy'));
  // Envoy's stand-in, with its ConfigMap volumes projected where the bootstrap expects them.
  const envoy = byRole('envoy');
  const envoyRoot = path.join(dir, 'envoy-volumes');
  projectConfigMaps(envoy, objects, envoyRoot);
  const edge = runInPod(envoy.deployment, pn.ns('envoy'), podTmp('envoy'), { PATH },
    ['node', '--import', 'tsx', path.join(APP, 'test/chart/wiring/edge.ts'), envoyRoot, ...envoy.argv.slice(1)]);
  launcher = compileLauncher(path.join(dir, 'browser-image'));
  const rendererPod = await startRendererPod(byRole('renderer'));
  browserProc = rendererPod.browser;
  // The first key, as NOTES.txt makes it (`kubectl exec deployment/…-policy -- tintype keys
  // create`): in the policy pod, with its environment, once policy is ready.
  const firstKey = ready(byRole('policy'), policy).then(async () => {
    ({ key, keyId } = await createKey('free', 'first'));
  });
  // All at once, in no order, as a cluster starts them: the renderer's self-test is retried
  // until the guard answers, the edge's health checks until policy and the renderer are ready.
  await Promise.all([ready(byRole('guard'), guard), ready(byRole('renderer'), rendererPod.renderer), ready(envoy, edge), firstKey]);
  await edge.waitFor(/edge\.ready/);
});

/** A call of the client outside the cluster to the edge's public port. */
const call = (method: string, p: string, body?: string) => request({
  host: podNet!.addr('envoy'), port: byRole('envoy').ports['https']!, path: p, method, localAddress: podNet!.clientAddr,
  headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, body,
});

t.test('the first key, /v1/ping and one render through the edge', async (t) => {
  const ping = await call('GET', '/v1/ping');
  t.equal(ping.status, 200, ping.body.toString('utf8'));
  t.equal(JSON.parse(ping.body.toString('utf8')).pong, true);
  // A document of its own, so the render is a miss whatever ran before.
  const html = `<html><body style="background:#123456"><h1>wiring ${randomBytes(6).toString('hex')}</h1></body></html>`;
  const shot = await call('POST', '/v1/html-to-image', JSON.stringify({ html, width: 320, height: 200 }));
  t.equal(shot.status, 200, shot.status === 200 ? 'rendered' : shot.body.toString('utf8'));
  t.ok(shot.body.subarray(0, 4).equals(PNG), 'a PNG');
  t.equal(shot.headers[CACHE_HEADER], 'miss');
  t.equal(shot.headers[RATELIMIT_LIMIT_HEADER], '60', "the free plan's position, from policy through the edge");
});

t.test('each setting reached what it names', async (t) => {
  const n = podNet!;
  // DATABASE_URL: the ledger is in the fresh database, and TINTYPE_POLICY_URL: the renderer settled
  // its lease there (settles follow the answer, so they are waited for, within the lease's life).
  const db = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:5432/${DB}` });
  db.on('error', () => {});
  await db.connect();
  let rows: Array<{ operation: string; status: number; metered: boolean }> = [];
  try {
    const until = Date.now() + 30_000;
    for (;;) {
      rows = (await db.query('SELECT operation, status, metered FROM usage WHERE key_id = $1 ORDER BY seq', [keyId])).rows;
      if (rows.length >= 2 || Date.now() > until) break;
      await new Promise((r) => setTimeout(r, 200));
    }
  } finally {
    await db.end();
  }
  t.same(rows, [{ operation: 'ping', status: 200, metered: true }, { operation: 'html-to-image', status: 200, metered: true }], 'both calls metered in the release\'s database');
  // Usage on policy's admin socket in its emptyDir, as an operator's kubectl exec reads it
  // (NOTES.txt). On the admin port it is not served, not even from the pod's own loopback, where
  // a sidecar mesh delivers every peer (TINTYPE_POLICY_USAGE_OPEN unset).
  const month = new Date().toISOString().slice(0, 7);
  const usagePath = `/usage?month=${month}&key=${keyId}`;
  t.equal((await get(n.addr('policy'), byRole('policy').ports['admin']!, usagePath)).status, 404, 'usage is not served to a peer off the pod');
  t.equal((await getInPod(n.ns('policy'), byRole('policy').ports['admin']!, usagePath)).status, 404, 'nor on the pod\'s loopback');
  const usage = await getOnAdminSocket('policy', usagePath);
  t.equal(usage.status, 200, usage.status === 200 ? 'usage on the admin socket' : usage.body.toString('utf8'));
  const report = JSON.parse(usage.body.toString('utf8'));
  t.equal(report.keys[0].keyId, keyId);
  t.equal(report.keys[0].metered, 2);
  t.equal(report.keys[0].inFlight, 0, 'no lease left open');
  // REDIS_URL: the render is cached in the release's Redis database.
  const redis = new Redis({ ...REDIS, db: REDIS_DB, lazyConnect: true });
  await redis.connect();
  const cached = await redis.keys('tintype:render:*');
  redis.disconnect();
  t.ok(cached.length >= 1, 'the render is in Redis');
  // GUARD_URL: the renderer's self-test went through the guard pod, which counted its decisions.
  const metrics = await get(n.addr('guard'), byRole('guard').ports['admin']!, METRICS_PATH);
  const decisions = [...metrics.body.toString('utf8').matchAll(/^tintype_guard_decisions_total\{[^}]*\} (\d+)/gm)].reduce((a, m) => a + Number(m[1]), 0);
  t.ok(decisions > 0, `the guard pod judged the self-test's requests (${decisions})`);
  // TINTYPE_ISOLATION and TINTYPE_SLOTS: the renderer as the pod runs it, as the controller reads it.
  const state = await get(n.addr('renderer'), byRole('renderer').ports['admin']!, STATE_PATH);
  t.match(JSON.parse(state.body.toString('utf8')), { slots: 1, guard: 'verified', draining: false, sandbox: SANDBOX_HERE });
  // Whether Chromium's sandbox is on is said on /state and as a metric, as the browser container found it.
  const rendererMetrics = await get(n.addr('renderer'), byRole('renderer').ports['admin']!, METRICS_PATH);
  t.match(rendererMetrics.body.toString('utf8'), new RegExp(`^tintype_browser_sandbox ${SANDBOX_HERE ? 1 : 0}$`, 'm'));
  const renderer = procs.find((p) => p.name === byRole('renderer').deployment)!;
  t.match(renderer.output(), /"browser\.started".*"isolation":"pod"/, 'Chromium runs with the pod as its namespace');
});

t.test('the pods reach each other only as the NetworkPolicies say', async (t) => {
  const n = podNet!;
  const a = (p: string): string => n.addr(p);
  const [fromRenderer, fromGuard, fromEnvoy, fromPolicy, fromOutside] = await Promise.all([
    connectFrom(n.ns('renderer'), [[a('policy'), 8181], [a('guard'), 3128], [a('redis'), 6379], [a('policy'), 8081], [a('policy'), 9081], [a('guard'), 9128], [a('postgresql'), 5432], [a('envoy'), 8443]]),
    connectFrom(n.ns('guard'), [[a('policy'), 8081], [a('renderer'), 8082], [a('redis'), 6379]]),
    connectFrom(n.ns('envoy'), [[a('policy'), 8081], [a('policy'), 9081], [a('renderer'), 8082], [a('renderer'), 9082], [a('guard'), 3128], [a('postgresql'), 5432], [a('policy'), 8181]]),
    connectFrom(n.ns('policy'), [[a('postgresql'), 5432], [a('redis'), 6379], [a('renderer'), 8082]]),
    // From outside the cluster: the edge's public port only (the pods' own rules drop the rest).
    Promise.all(([['policy', 8081], ['policy', 9081], ['renderer', 8082], ['guard', 3128]] as const).map(([pod, port]) =>
      get(a(pod), port, READY_PATH, n.clientAddr, 2_000).then(() => `${pod}:${port} answered`, (e: Error) => `${pod}:${port} ${e.message}`))),
  ]);
  t.same(Object.values(fromRenderer), ['connected', 'connected', 'connected', 'EACCES', 'EACCES', 'EACCES', 'EACCES', 'EACCES'],
    "the renderer (and Chromium in it): policy's claim and settle port (not its ext_authz port), the guard and Redis only");
  t.same(Object.values(fromGuard), ['EACCES', 'EACCES', 'EACCES'], 'the guard: none of the release, nor Redis');
  t.same(Object.values(fromEnvoy), ['connected', 'connected', 'connected', 'connected', 'EACCES', 'EACCES', 'EACCES'], "Envoy: policy's ext_authz (not its claim and settle port) and the renderers, their admin ports for health checks");
  t.same(Object.values(fromPolicy), ['connected', 'EACCES', 'EACCES'], 'policy: PostgreSQL only');
  t.same(fromOutside, ['policy:8081 timeout', 'policy:9081 timeout', 'renderer:8082 timeout', 'guard:3128 timeout'], 'a client outside the cluster reaches none of them');
});

t.test("the browser container: Chromium's own uid and PID namespace, no secret it can read, no way out but the guard", async (t) => {
  const n = podNet!;
  const a = (p: string): string => n.addr(p);
  const status = (pid: number, field: string): string[] =>
    (readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith(`${field}:`)) ?? '').slice(field.length + 1).trim().split(/\s+/);
  // Seen from the node: the container's first process (below `unshare --fork`) and what it started.
  const top = browserProc!.child.pid!;
  const inner = processTree(top).find((p) => p.ppid === top)?.pid;
  t.ok(inner, 'the container runs');
  const tree = processTree(inner!).map((p) => p.pid);
  const chromium = tree.filter((pid) => /chrom/.test(readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0] ?? ''));
  t.ok(chromium.length > 0, 'Chromium runs in it');
  const rendererProc = procs.find((p) => p.name === byRole('renderer').deployment)!;
  const rendererPid = processTree(rendererProc.child.pid!).map((p) => p.pid)
    .find((pid) => { try { return readFileSync(`/proc/${pid}/environ`, 'utf8').includes(SECRETS.redisUrl); } catch { return false; } });
  t.ok(rendererPid, 'the renderer process holds the secrets in its environment');
  for (const pid of [inner!, ...chromium]) {
    try {
      t.same(status(pid, 'Uid').concat(status(pid, 'Gid')).filter((id) => id !== String(browserUid)), [], `pid ${pid}: the container's uid and gid only`);
      t.not(readlinkSync(`/proc/${pid}/ns/pid`), readlinkSync(`/proc/${rendererPid}/ns/pid`), `pid ${pid}: a PID namespace that is not the renderer's`);
      // Where Chromium's sandbox runs, its page processes have a network namespace of their own, with nothing in it.
      const net = readlinkSync(`/proc/${pid}/ns/net`);
      if (net !== readlinkSync(`/proc/${rendererPid}/ns/net`)) t.ok(SANDBOX_HERE && pid !== inner, `pid ${pid}: a network of its own, in Chromium's sandbox`);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
  // From inside it, as its uid: what a process that broke out of Chromium's renderer would find.
  const forgedLease = Buffer.from(JSON.stringify({ id: 'l_forged', keyId: keyId, operation: 'html-to-image', expiresAt: Date.now() + 60_000 })).toString('base64url') + '.AAAA';
  const targets: Array<[string, number]> = [[a('guard'), 3128], [a('postgresql'), 5432], [a('envoy'), 8443], [a('policy'), 8081], [a('policy'), 9081], [a('guard'), 9128]];
  const input = [
    Object.values(SECRETS),
    [`/proc/${rendererPid}/environ`, path.join(dir, 'wiring-values.yaml'), path.join(ROOT, 'package.json'), path.join(podTmp('renderer'), 'x')],
    targets,
    [
      { name: 'renderer: a render without a lease', host: a('renderer'), port: 8082, path: '/v1/html-to-image', method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"html":"<p>x</p>"}' },
      { name: 'renderer: a render with a forged lease', host: a('renderer'), port: 8082, path: '/v1/html-to-image', method: 'POST', headers: { 'content-type': 'application/json', [LEASE_HEADER]: forgedLease }, body: '{"html":"<p>x</p>"}' },
      { name: 'policy: a settle of a forged lease', host: a('policy'), port: DEFAULT_POLICY_SETTLE_PORT, path: SETTLE_PATH, method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ lease: forgedLease, status: 200 }) },
      { name: 'policy: a claim of a forged lease', host: a('policy'), port: DEFAULT_POLICY_SETTLE_PORT, path: CLAIM_PATH, method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ lease: forgedLease }) },
    ],
  ];
  // With no environment of this test's: tap adds to every child's NODE_OPTIONS loaders inside the
  // checkout, which the container does not see when node_modules is a directory in it.
  const probe = await new Promise<string>((resolve, reject) => {
    execFile('nsenter', ['--target', String(inner), '--pid', '--mount', '--net', `--setuid=${browserUid}`, `--setgid=${browserUid}`, '--',
      // env -i: tap gives every child its loader through NODE_OPTIONS by a checkout path the container cannot see.
      'env', '-i', '/run/tintype-image/node', '-e', PROBE, JSON.stringify(input)], { encoding: 'utf8' }, (err, out, errOut) => (err === null ? resolve(out) : reject(new Error(`${err.message}: ${errOut}`))));
  });
  const seen = JSON.parse(probe);
  t.equal(seen.uid, browserUid, 'the probe runs as the container');
  t.ok(seen.pids.length > 0 && !seen.pids.includes(rendererPid), `its /proc shows its own processes only (${seen.pids.length}), never the renderer's`);
  t.same(seen.secretIn, [], 'no environment and no file it can read holds a secret');
  t.same(Object.values(seen.paths), ['ENOENT', 'ENOENT', 'ENOENT', 'ENOENT'], "the renderer's environ, the release's values, the checkout, the renderer's /tmp: none there");
  t.same(targets.map(([h, p]) => seen.connects[`${h}:${p}`]), ['connected', 'EACCES', 'EACCES', 'EACCES', 'EACCES', 'EACCES'], "the guard's proxy; not PostgreSQL, the edge, policy's ext_authz or admin port, or the guard's");
  t.same(seen.requests, {
    'renderer: a render without a lease': 401,
    'renderer: a render with a forged lease': 401,
    'policy: a settle of a forged lease': 401,
    'policy: a claim of a forged lease': 401,
  }, "policy's and the renderer's ports refuse it: it holds nothing they take");
});

/** A container of a pod as the kubelet stops it: its rendered preStop (an httpGet from the node), SIGTERM to its first process. */
function container(plan: PodPlan, c: any, pod: string, proc: Proc, pid = proc.child.pid!): Container {
  const hook = c.lifecycle?.preStop;
  if (hook !== undefined && hook.httpGet === undefined) throw new Error(`${plan.deployment} ${c.name}: a preStop this run does not carry out`);
  const signal = (s: NodeJS.Signals) => (): void => { try { process.kill(pid, s); } catch { /* gone */ } };
  return {
    ...(hook === undefined ? {} : {
      preStop: async () => {
        const port = typeof hook.httpGet.port === 'number' ? hook.httpGet.port : plan.ports[hook.httpGet.port]!;
        return (await get(podNet!.addr(pod), port, hook.httpGet.path, undefined, plan.pod.terminationGracePeriodSeconds * 1000)).status;
      },
    }),
    term: signal('SIGTERM'),
    kill: () => { try { process.kill(-proc.child.pid!, 'SIGKILL'); } catch { /* gone */ } },
    exited: proc.exited,
  };
}

/** The pods running now, by role: their processes, the renderer's browser container too. */
const running = new Map<string, { pod: string; plan: PodPlan; procs: Proc[] }>();

/**
 * A Deployment's rolling update of its one pod (maxSurge first: docs/helm.md "Rolling restarts"):
 * a new pod joins the network with an address of its own; once its readiness probe passes it joins
 * its Services' endpoints (every pod's DNS); then the old pod is deleted: it leaves the endpoints
 * and the kubelet stops it as the rendered Deployment says (kubeletStop).
 */
async function rollOut(role: string, beforeDeletion: (pod: string) => Promise<void>): Promise<Stopped> {
  const n = podNet!;
  const old = running.get(role)!;
  const plan = nextPlans.find((p) => p.component === role)!;
  const pod = `${role}-next`;
  podLabels[pod] = podLabels[role]!;
  podPorts[pod] = podPorts[role]!;
  n.addPod(pod, openPaths([...n.pods(), pod], pod));
  let procs: Proc[];
  if (role === 'renderer') {
    const r = await startRendererPod(plan, pod, `${plan.deployment}-1`);
    await ready(plan, r.renderer, pod);
    procs = [r.renderer, r.browser];
  } else {
    procs = [startPod(plan, pod)];
    await ready(plan, procs[0]!, pod);
  }
  const services = (objects.filter((o) => o.kind === 'Service') as any[]).filter((s) => selects(s, old.pod));
  for (const s of services) n.resolve(s.metadata.name, [old.pod, pod]);
  await beforeDeletion(pod);
  for (const s of services) n.resolve(s.metadata.name, [pod]);
  const containers = old.plan.pod.containers.map((c: any, i: number) => {
    const proc = old.procs[i]!;
    // The browser container's first process is the launcher below `unshare --fork` (its PID 1).
    const top = proc.child.pid!;
    return container(old.plan, c, old.pod, proc, c.name === 'browser' ? processTree(top).find((p) => p.ppid === top)!.pid : top);
  });
  const stopped = await kubeletStop(containers, old.plan.pod.terminationGracePeriodSeconds);
  running.set(role, { pod, plan, procs });
  return stopped;
}

/** A renderer's answers of render operations, from its admin port's metrics. */
async function rendersServed(pod: string): Promise<number> {
  const m = await get(podNet!.addr(pod), byRole('renderer').ports['admin']!, METRICS_PATH).catch(() => undefined);
  return [...(m?.body.toString('utf8') ?? '').matchAll(/^tintype_renders_total\{[^}]*\} (\d+)/gm)].reduce((a, x) => a + Number(x[1]), 0);
}

t.test('a rolling restart of policy, the renderer and the guard under steady traffic: nothing lost, nothing billed undelivered', async (t) => {
  const n = podNet!;
  for (const role of ['policy', 'renderer', 'guard']) {
    const plan = byRole(role);
    const proc = procs.find((p) => p.name === plan.deployment)!;
    running.set(role, { pod: role, plan, procs: role === 'renderer' ? [proc, browserProc!] : [proc] });
  }
  // Keys of their own, on a plan whose per-minute limit the paced traffic stays under.
  const [pinger, renderer] = await Promise.all([createKey('scale', 'rollout-pings'), createKey('scale', 'rollout-renders')]);
  // The client keeps its connections to the edge open, as callers do.
  const agent = new http.Agent({ keepAlive: true });
  const edge = (k: string, method: string, p: string, body?: string): Promise<Answer> => send({
    host: n.addr('envoy'), port: byRole('envoy').ports['https']!, localAddress: n.clientAddr, agent, method, path: p, body,
    headers: { authorization: `Bearer ${k}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
  });
  let i = 0;
  // Each render a miss (a document of its own), with an image the guard refuses: every render's page goes through the guard.
  const page = (): string => JSON.stringify({
    html: `<html><body><p>rollout ${i++} ${randomBytes(4).toString('hex')}</p><img src="http://169.254.169.254/x.png"></body></html>`, width: 64, height: 64,
  });
  const pings = steady(() => edge(pinger.key, 'GET', '/v1/ping'), TRAFFIC_PERIOD_MS);
  const renders = steady(() => edge(renderer.key, 'POST', '/v1/html-to-image', page()), TRAFFIC_PERIOD_MS);
  await Promise.all([pings.more(3), renders.more(3)]);
  // Where the run was when an answer came, to tell a failure's cause: each rollout's steps, by time.
  const steps: Array<{ at: number; step: string }> = [{ at: 0, step: 'before the rollouts' }];
  const stepOf = (a: Answer): string => {
    const s = steps.filter((x) => x.at <= (a.at ?? 0)).sort((x, y) => x.at - y.at).at(-1)!;
    return `${s.step}, +${(a.at ?? 0) - s.at} ms`;
  };
  for (const role of ['policy', 'renderer', 'guard']) {
    steps.push({ at: Date.now(), step: `${role}: the new pod starting` });
    const stopped = await rollOut(role, async (pod) => {
      steps.push({ at: Date.now(), step: `${role}: the new pod ready` });
      // The chart runs two pods of each role, this run one: the other pod is what carries the
      // renders while the edge, which re-resolves the renderers' name at its refresh rate, has
      // not yet taken the new one. Here the old pod goes once the edge has sent the new one a render.
      if (role !== 'renderer') return;
      const by = Date.now() + NEW_RENDERER_SERVES_WITHIN_MS;
      while ((await rendersServed(pod)) === 0) {
        if (Date.now() > by) throw new Error(`the edge sent the new renderer no render within ${NEW_RENDERER_SERVES_WITHIN_MS} ms of its being ready`);
        await new Promise((r) => setTimeout(r, 250));
      }
    });
    steps.push({ at: stopped.deletedAt, step: `${role}: the old pod deleted` }, { at: Math.min(...stopped.sigtermAt), step: `${role}: the old pod's SIGTERM` });
    steps.push({ at: Date.now(), step: `${role}: the old pod gone` });
    const plan = byRole(role);
    const hooks = plan.pod.containers.map((c: any) => (c.lifecycle?.preStop === undefined ? undefined : 200));
    t.same(stopped.preStop, hooks, `${role}: each container's preStop (${plan.pod.containers.map((c: any) => `${c.name}: ${c.lifecycle?.preStop?.httpGet?.path ?? 'none'}`).join(', ')}) answered 200`);
    t.ok(stopped.exitedWithinGrace, `${role}: the old pod was gone within its grace period (${plan.pod.terminationGracePeriodSeconds} s; ` +
      `its containers stopped ${stopped.stoppedMs.join(' and ')} ms after their SIGTERM)`);
    // Traffic goes on through the new pod.
    await Promise.all([pings.more(3), renders.more(3)]);
  }
  await Promise.all([pings.stop(), renders.stop()]);
  agent.destroy();
  const first = steps[1]!.at;
  t.comment(`the steps, from the first new pod's start: ${steps.slice(1).map((s) => `${s.step} +${s.at - first} ms`).join('; ')}`);
  t.ok(renders.answers.length > 10, `${renders.answers.length} renders, ${pings.answers.length} pings`);
  const told = (a: Answer): string => `${a.status} ${a.body} (${stepOf(a)})`;
  t.same(pings.answers.filter((a) => a.status !== 200 && !isBusy(a)).map(told), [], 'every ping 200 or 503 busy with retry-after');
  t.comment(`pings answered 503 busy: ${pings.answers.filter(isBusy).map(stepOf).join('; ') || 'none'}`);
  // Under overload the service sheds with 503 busy, by design: policy while its store does not
  // answer in time (docs/operations.md "Stores"), the edge while policy does not answer its check
  // within ext_authz's timeout. On this 2-core machine under a full test run both happen whatever
  // the rollout does. Such a render is told apart by that line in policy's or the edge's log just
  // before it; any other 503 (a check or a render sent to a pod that had gone) is the rollout's.
  const logged = (name: string, match: string): number[] => procs.filter((p) => p.name.startsWith(name))
    .flatMap((p) => p.output().split('\n').filter((l) => l.includes(match)))
    .map((l) => Date.parse((JSON.parse(l) as { time: string }).time));
  const overloaded = [
    ...logged(byRole('policy').deployment, '"event":"store_unavailable"'),
    ...logged(byRole('envoy').deployment, '"reason":"policy timed out"'),
  ];
  const shed = (a: Answer): boolean => isBusy(a) && overloaded.some((at) => at <= (a.at ?? 0) + 1_000 && at >= (a.at ?? 0) - SHED_WINDOW_MS);
  const unexplained = renders.answers.filter((a) => a.status !== 200 && !shed(a));
  t.same(unexplained.map(told), [], 'every render 200: no 503 busy but what overload shed');
  // What the roles warned of, to tell such a failure's cause (a settle or claim that failed, a store that did not answer).
  if (unexplained.length > 0) {
    for (const p of procs) {
      const warned = p.output().split('\n').filter((l) => /"level":"(warn|error)"/.test(l));
      if (warned.length > 0) t.comment(`${p.name} warned:\n${warned.slice(-40).join('\n')}`);
    }
  }
  t.comment(`renders shed 503 busy by overload (policy's store or its check too slow): ${renders.answers.filter(shed).map(stepOf).join('; ') || 'none'}`);
  const blocked = renders.answers.filter((a) => a.status === 200 && a.headers[BLOCKED_HEADER] !== '1').length;
  t.comment(`renders whose refused image the guard's tally did not count: ${blocked}`);
  // Every lease settled (none left in flight), then the ledger: metered exactly what was delivered.
  const month = new Date().toISOString().slice(0, 7);
  for (const [who, k, answers] of [['pings', pinger.keyId, pings.answers], ['renders', renderer.keyId, renders.answers]] as const) {
    let report: any;
    for (;;) {
      const usage = await getOnAdminSocket(running.get('policy')!.pod, `/usage?month=${month}&key=${k}`);
      report = JSON.parse(usage.body.toString('utf8')).keys[0];
      if (report.inFlight === 0) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    t.equal(report.metered, answers.filter((a) => a.status === 200).length, `${who}: metered exactly the 200s delivered`);
  }
});
