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
 */
import { type ChildProcess, execFile, execFileSync, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import t from 'tap';
import { NAMESPACE, ROOT, render, type K8sObject } from '../helm.ts';
import { allowed, type Endpoint } from './network-policy-eval.ts';
import { createPodNet, podNetAddresses, type Path, type PodNet } from './wiring/pod-net.ts';
import { imageConfig, tintypeImage } from './tintype-image.ts';
import { podPlans, projectConfigMaps, containerEnv, type PodPlan } from './wiring/pods.ts';
import { browserContainerArgv, compileLauncher, emptyDirFor, mountLines, PROBE, type VolumeMount } from './wiring/browser-container.ts';
import { processTree } from '../../renderer/browser/process-tree.ts';
import { CLAIM_PATH, LEASE_HEADER, SETTLE_PATH } from '../../lib/policy-contract.ts';
import { DEFAULT_POLICY_SETTLE_PORT } from '../../policy/server.ts';
import { runMigrationJob } from './wiring/migrate.ts';
import { METRICS_PATH, READY_PATH } from '../../lib/admin.ts';
import { STATE_PATH } from '../../lib/state-contract.ts';
import { RATELIMIT_LIMIT_HEADER } from '../../lib/policy-contract.ts';
import { TEST_LEASE_ENV } from '../lib/leases.ts';
import { CACHE_HEADER } from '../../renderer/server/answer-headers.ts';

/* eslint-disable @typescript-eslint/no-explicit-any */

// Five processes and a Chromium start on a shared machine; the test's own waits are bounded below.
t.setTimeout(240_000);

const ID = 1 + (process.pid % 250);
const PG_ADMIN = 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS = { host: '127.0.0.1', port: 6379 };
/** The Redis database index this test's renders are cached in (emptied before and after). */
const REDIS_DB = 5;
const DB = `tintype_wiring_${process.pid}_${randomBytes(3).toString('hex')}`;
const HERE = { 'kubernetes.io/metadata.name': NAMESPACE };
/** The stand-ins' labels: the chart's default NetworkPolicy selectors (values networkPolicy.postgres, .redis). */
const BACKENDS = {
  postgresql: { labels: { 'app.kubernetes.io/name': 'postgresql' }, port: 5432, host: '127.0.0.1', hostPort: 5432 },
  redis: { labels: { 'app.kubernetes.io/name': 'redis' }, port: 6379, host: REDIS.host, hostPort: REDIS.port },
} as const;
/** How long a pod may take to pass its readiness probe (Chromium's start and self-test included). */
const READY_WITHIN_MS = 180_000;
const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47]);
/** A TCP relay from `host:port` in a namespace to a unix socket of the machine (no tsx: quick to start). */
const RELAY_JS = "const net=require('net');const [h,p,s]=process.argv.slice(1);net.createServer(c=>{const u=net.connect(s);c.pipe(u).pipe(c);const e=()=>{c.destroy();u.destroy()};for(const x of [c,u]){x.on('error',e);x.on('close',e)}}).listen(+p,h,()=>console.log('relay.ready'))";

interface Proc {
  name: string;
  child: ChildProcess;
  output(): string;
  waitFor(re: RegExp): Promise<void>;
  exited: Promise<number | null>;
}

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
const procs: Proc[] = [];
const hostServers: net.Server[] = [];
let podNet: PodNet | undefined;
let dbMade = false;
let objects: K8sObject[] = [];
let plans: PodPlan[] = [];
const byRole = (role: string): PodPlan => {
  const p = plans.find((x) => x.component === role);
  if (p === undefined) throw new Error(`no ${role} Deployment`);
  return p;
};

/**
 * Runs argv in a pod: its namespace, this checkout at APP (its working directory), its own /tmp
 * (the pod's emptyDir), exactly `env`.
 */
function runInPod(name: string, ns: string, tmp: string, env: Record<string, string>, argv: string[]): Proc {
  const pod = 'app=$1 tmp=$2; shift 2; mount --rbind "$0" "$app" && mount --bind "$tmp" /tmp && cd "$app" && exec env -i "$@"';
  const child = spawn('ip', ['netns', 'exec', ns, 'sh', '-c', pod, ROOT, APP, tmp,
    ...Object.entries(env).map(([k, v]) => `${k}=${v}`), ...argv], { cwd: '/', detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  return track(name, child);
}

/** The Proc of a started child: its output, its exit, waiting for a line; stopped at teardown. */
function track(name: string, child: ChildProcess): Proc {
  let out = '';
  const waiters: Array<{ re: RegExp; resolve: () => void }> = [];
  const onData = (c: Buffer): void => {
    out += c.toString('utf8');
    for (const w of waiters.filter((x) => x.re.test(out))) {
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve();
    }
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const proc: Proc = {
    name,
    child,
    output: () => out,
    exited,
    waitFor: (re) => new Promise<void>((resolve, reject) => {
      if (re.test(out)) return resolve();
      waiters.push({ re, resolve });
      void exited.then((code) => reject(new Error(`${name} exited (${code}):\n${out.slice(-3000)}`)));
    }),
  };
  procs.push(proc);
  return proc;
}

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
async function ready(plan: PodPlan, proc: Proc): Promise<void> {
  const { path: p, port } = plan.probe('readinessProbe');
  const deadline = Date.now() + READY_WITHIN_MS;
  let ended = false;
  void proc.exited.then(() => { ended = true; });
  for (;;) {
    if (ended) throw new Error(`${plan.deployment} exited before it was ready:\n${proc.output().slice(-3000)}`);
    const r = await get(podNet!.addr(plan.component), port, p, undefined, 2_000).catch(() => undefined);
    if (r?.status === 200) return;
    if (Date.now() > deadline) throw new Error(`${plan.deployment}: ${p} on ${port} not ready within ${READY_WITHIN_MS} ms:\n${proc.output().slice(-3000)}`);
    await new Promise((r2) => setTimeout(r2, 250));
  }
}

/** A relay on the machine from a unix socket to a local service: what the backend stand-in pods forward to. */
async function hostRelay(sock: string, host: string, port: number): Promise<void> {
  const s = net.createServer((c) => {
    const u = net.connect(port, host);
    c.pipe(u).pipe(c);
    const end = (): void => { c.destroy(); u.destroy(); };
    for (const x of [c, u]) { x.once('error', end); x.once('close', end); }
  });
  await new Promise<void>((r) => s.listen(sock, r));
  hostServers.push(s);
}

/** Debian's tini, the init the image's ENTRYPOINT starts `tintype` under. */
const TINI = '/usr/bin/tini';

/**
 * What a tintype pod runs here. Its argv must start with tini (the image's ENTRYPOINT); where this
 * machine has no tini (it is not in scripts/apt-packages.txt), what tini would start (after its
 * `--`) runs in its place, and only once the argv was seen to start with it. tini's reaping and
 * signal forwarding are not what this test checks: the wiring is.
 */
function tintypeArgv(plan: PodPlan): string[] {
  const end = plan.argv.indexOf('--');
  if (plan.argv[0] !== TINI || end < 0) throw new Error(`${plan.deployment} does not run under ${TINI}: ${plan.argv.join(' ')}`);
  return existsSync(TINI) ? plan.argv : plan.argv.slice(end + 1);
}

/** Whether TCP connections from a pod reach `host:port`: `connected`, or the error (EACCES: refused by the pod's own rules; timeout: dropped by the peer's). */
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

async function connectFrom(ns: string, targets: Array<[string, number]>): Promise<Record<string, string>> {
  const code = "const net=require('net');const ts=JSON.parse(process.argv[1]);const out={};let n=ts.length;" +
    "for(const [h,p] of ts){const s=net.connect({host:h,port:p,timeout:1500});const done=(r)=>{if(out[h+':'+p])return;out[h+':'+p]=r;s.destroy();if(--n===0)console.log(JSON.stringify(out))};" +
    "s.on('connect',()=>done('connected'));s.on('error',e=>done(e.code));s.on('timeout',()=>done('timeout'))}";
  const stdout = await new Promise<string>((resolve, reject) => {
    execFile('ip', ['netns', 'exec', ns, 'node', '-e', code, JSON.stringify(targets)], { encoding: 'utf8' }, (err, out) => err === null ? resolve(out) : reject(err));
  });
  const got = JSON.parse(stdout) as Record<string, string>;
  // In the order asked, whatever order they finished in.
  return Object.fromEntries(targets.map(([h, p]) => [`${h}:${p}`, got[`${h}:${p}`]!]));
}

async function stopAll(): Promise<void> {
  for (const p of procs) {
    if (p.child.exitCode === null && p.child.signalCode === null) {
      try { process.kill(-p.child.pid!, 'SIGTERM'); } catch { /* gone */ }
    }
  }
  await Promise.all(procs.map((p) => Promise.race([p.exited, new Promise((r) => setTimeout(r, 15_000))])));
  for (const p of procs) {
    try { process.kill(-p.child.pid!, 'SIGKILL'); } catch { /* gone */ }
  }
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
  await step('processes', stopAll);
  const n = podNet;
  if (n !== undefined) {
    // Anything still in a pod's namespace (a Chromium left by a killed renderer) is ours: it goes too.
    await step('leftover processes', () => {
      for (const pod of ['envoy', 'policy', 'renderer', 'guard', 'postgresql', 'redis']) {
        let pids: string[] = [];
        try { pids = execFileSync('ip', ['netns', 'pids', n.ns(pod)], { encoding: 'utf8' }).split('\n').filter(Boolean); } catch { /* no such namespace */ }
        for (const pid of pids) {
          try { process.kill(Number(pid), 'SIGKILL'); } catch { /* gone */ }
        }
      }
    });
    await step('network', () => n.destroy());
  }
  await step('relays', () => { for (const s of hostServers) s.close(); });
  if (dbMade) {
    await step('database', async () => {
      const a = new pg.Client({ connectionString: PG_ADMIN });
      a.on('error', () => {});
      await a.connect();
      try { await a.query(`DROP DATABASE IF EXISTS ${DB} WITH (FORCE)`); } finally { await a.end(); }
    });
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
};
/** Whether the browser container's uid can make the user namespaces Chromium's sandbox needs on this machine. */
const SANDBOX_HERE = spawnSync('setpriv', ['--reuid=10002', '--regid=10002', '--clear-groups', 'unshare', '--user', 'true']).status === 0;
/** The browser container's process (its launcher), and the uid it runs as. */
let browserProc: Proc | undefined;
let browserUid = 0;

t.before(async () => {
  const admin = new pg.Client({ connectionString: PG_ADMIN });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${DB}`);
  dbMade = true;
  await admin.end();
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
    // Not the default, so the renderer's /state shows the value reached it.
    'renderer:',
    '  slots: 1',
    '',
  ].join('\n'));
  objects = await render('default-values.yaml', ['-f', values]);
  const image = { name: tintypeImage('default-values.yaml', ['-f', values]), config: imageConfig(path.join(ROOT, 'Dockerfile')) };
  plans = podPlans(objects, image, (d) => ({ namespace: NAMESPACE, podName: `${d}-0`, podIP: '' }));

  // The pods: each Deployment's, and the two backends'.
  const pods = [...plans.map((p) => p.component), 'postgresql', 'redis'];
  const labels: Record<string, Record<string, string>> = {
    ...Object.fromEntries(plans.map((p) => [p.component, p.labels])),
    postgresql: BACKENDS.postgresql.labels,
    redis: BACKENDS.redis.labels,
  };
  const listens: Record<string, number[]> = {
    ...Object.fromEntries(plans.map((p) => [p.component, Object.values(p.ports)])),
    postgresql: [BACKENDS.postgresql.port],
    redis: [BACKENDS.redis.port],
  };
  // Service names: each rendered Service resolves to the pods its selector picks; the backends'
  // names are the hosts of the URLs the Secret holds.
  const hosts: Record<string, string> = { postgresql: 'postgresql', redis: 'redis' };
  for (const s of objects.filter((o) => o.kind === 'Service') as any[]) {
    const pod = pods.find((p) => Object.entries(s.spec.selector ?? {}).every(([k, v]) => labels[p]![k] === v));
    if (pod !== undefined) hosts[s.metadata.name] = pod;
  }
  // The paths the rendered NetworkPolicies open, between every pair and on every port listened on.
  const policies = objects.filter((o) => o.kind === 'NetworkPolicy');
  const addresses = podNetAddresses(ID, pods);
  const endpoint = (p: string): Endpoint => p === 'client' ? { ip: addresses.clientAddr } : { labels: labels[p]!, namespace: HERE, ip: addresses.addr(p) };
  const paths: Path[] = [];
  for (const from of [...pods, 'client']) {
    for (const to of pods) {
      if (from === to) continue;
      for (const port of listens[to]!) if (allowed(policies, HERE, endpoint(from), endpoint(to), port)) paths.push({ from, to, port });
    }
  }
  podNet = createPodNet(ID, pods, hosts, paths);
  const pn = podNet;

  // `tintype` on the PATH, as the image links it.
  const bin = path.join(dir, 'bin');
  mkdirSync(bin);
  mkdirSync(APP);
  symlinkSync(path.join(APP, 'bin/tintype'), path.join(bin, 'tintype'));
  const PATH = `${bin}:${inPod(path.dirname(process.execPath))}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`;

  for (const [name, b] of Object.entries(BACKENDS)) {
    const sock = path.join(dir, `${name}.sock`);
    await hostRelay(sock, b.host, b.hostPort);
    runInPod(name, pn.ns(name), podTmp(name), { PATH }, ['node', '-e', RELAY_JS, pn.addr(name), String(b.port), sock]);
  }
  await Promise.all(procs.map((p) => p.waitFor(/relay\.ready/)));

  const start = (plan: PodPlan): Proc => runInPod(plan.deployment, pn.ns(plan.component), podTmp(plan.component), { ...plan.env, PATH }, tintypeArgv(plan));
  // The pre-install hook Job first, as Helm runs it: `tintype migrate` with its own environment
  // (policy waits for the schema). Run where its NetworkPolicy lets it reach PostgreSQL: policy's pod.
  await runMigrationJob(objects, (env, argv) => runInPod('migrate', pn.ns('policy'), podTmp('migrate'), { ...env, PATH }, argv));
  const guard = start(byRole('guard'));
  const policy = start(byRole('policy'));
  // Envoy's stand-in, with its ConfigMap volumes projected where the bootstrap expects them.
  const envoy = byRole('envoy');
  const envoyRoot = path.join(dir, 'envoy-volumes');
  projectConfigMaps(envoy, objects, envoyRoot);
  const edge = runInPod(envoy.deployment, pn.ns('envoy'), podTmp('envoy'), { PATH },
    ['node', '--import', 'tsx', path.join(APP, 'test/chart/wiring/edge.ts'), envoyRoot, ...envoy.argv.slice(1)]);
  // The renderer pod's two containers: the browser's (the launcher, Chromium) and the renderer's,
  // sharing the pod's network and the socket's emptyDir, nothing else.
  const rendererPlan = byRole('renderer');
  const browser: any = rendererPlan.pod.containers.find((c: any) => c.name === 'browser');
  browserUid = browser.securityContext.runAsUser;
  const volumeDir = (volume: string, owner?: number): string => emptyDirFor(dir, 'renderer', volume, owner);
  const podMounts = (c: any, owner?: number): VolumeMount[] => (c.volumeMounts ?? [])
    .filter((m: any) => m.mountPath !== '/dev/shm' && (c !== rendererPlan.container || m.mountPath !== '/tmp'))
    .map((m: any) => ({ dir: volumeDir(m.name, owner), mountPath: m.mountPath }));
  const browserArgv = browserContainerArgv({
    ns: pn.ns('renderer'),
    uid: browserUid,
    mounts: podMounts(browser, browserUid),
    masked: [dir, ROOT],
    launcher: compileLauncher(path.join(dir, 'browser-image')),
    env: { PATH: '/usr/local/bin:/usr/bin:/bin', ...containerEnv(browser, objects, { namespace: NAMESPACE, podName: `${rendererPlan.deployment}-0`, podIP: '' }) },
  });
  browserProc = track('browser container', spawn(browserArgv[0]!, browserArgv.slice(1), { detached: true, stdio: ['ignore', 'pipe', 'pipe'] }));
  await browserProc.waitFor(/"launcher\.listening"/);
  // All at once, in no order, as a cluster starts them: the renderer's self-test is retried
  // until the guard answers, the edge's health checks until policy and the renderer are ready.
  const rendererMounts = mountLines(podMounts(rendererPlan.container));
  const renderer = runInPod(rendererPlan.deployment, pn.ns('renderer'), podTmp('renderer'), { ...rendererPlan.env, PATH },
    ['sh', '-c', `${rendererMounts.join(' && ')} && exec "$@"`, 'sh', ...tintypeArgv(rendererPlan)]);
  // The first key, as NOTES.txt makes it (`kubectl exec deployment/…-policy -- tintype keys
  // create`): in the policy pod, with its environment, once policy is ready.
  const firstKey = ready(byRole('policy'), policy).then(async () => {
    const made = runInPod('keys create', pn.ns('policy'), podTmp('policy'), { ...byRole('policy').env, PATH }, ['tintype', 'keys', 'create', '--plan', 'free', '--name', 'first']);
    const code = await made.exited;
    if (code !== 0) throw new Error(`tintype keys create in the policy pod exited ${code}:\n${made.output()}`);
    key = /^secret: (\S+)$/m.exec(made.output())?.[1] ?? '';
    keyId = /^id: (\S+)$/m.exec(made.output())?.[1] ?? '';
    if (key === '' || keyId === '') throw new Error('tintype keys create printed no id and secret');
  });
  await Promise.all([ready(byRole('guard'), guard), ready(byRole('renderer'), renderer), ready(envoy, edge), firstKey]);
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
  // Usage on policy's admin port, as an operator's port-forward reads it (NOTES.txt): from the
  // pod's own loopback. From another address it is not served (TINTYPE_POLICY_USAGE_OPEN unset).
  const month = new Date().toISOString().slice(0, 7);
  const usagePath = `/usage?month=${month}&key=${keyId}`;
  t.equal((await get(n.addr('policy'), byRole('policy').ports['admin']!, usagePath)).status, 404, 'usage is not served to a peer off the pod');
  const usage = await getInPod(n.ns('policy'), byRole('policy').ports['admin']!, usagePath);
  t.equal(usage.status, 200, usage.status === 200 ? 'usage on the admin port' : usage.body.toString('utf8'));
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
