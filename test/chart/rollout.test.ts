/**
 * A rolling restart of policy under steady traffic, as the chart renders it (docs/helm.md,
 * "Rolling restarts"): the migration as the hook Job runs it, then `tintype policy` pods with
 * their rendered environment on this machine's PostgreSQL; the cluster's side (the Service's
 * endpoints and DNS, Envoy's policy cluster with its health checks and ext_authz) from the
 * rendered bootstrap (rollout/policy-cluster.ts). The Deployment's rollout: the new pod starts and
 * joins the endpoints once ready; the old one is deleted: it leaves the endpoints, the kubelet
 * sends SIGTERM at once (no preStop: a drain no request can begin), the pod drains for
 * drainWaitSeconds (TINTYPE_TERM_DRAIN_S) serving on, and it must be gone within its grace period.
 * Meanwhile a client checks and settles without pause: every check is answered 200 (never even a
 * 503 busy), every settle lands, and the ledger meters exactly what was delivered. Without the
 * drain (TINTYPE_TERM_DRAIN_S=0) the same run answers 503 busy: the control. Then the guard, under
 * steady tunnels, as the renderers reach it through its Service. Then the renderer, under steady
 * real renders through the embedded edge, its renderer cluster following the endpoints as Envoy's
 * does (rollout/renderer-cluster.ts), with its own control.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { asPgAdmin } from '../lib/pg-admin.ts';
import t from 'tap';
import { parse } from 'yaml';
import { ROOT, named, render, type K8sObject } from '../helm.ts';
import { runTintype, startPolicyProcess, type PolicyProcess } from '../policy/process.ts';
import { spawnTintype } from '../tintype.ts';
import { listenBesideService } from '../lib/listen-beside.ts';
import { tintypeImageConfigs } from './tintype-image.ts';
import { podPlans } from './wiring/pods.ts';
import { runMigrationJob } from './wiring/migrate.ts';
import { policyCluster } from './rollout/policy-cluster.ts';
import { call, isBusy, kubeletStop, periodUnder, steady, type Answer, type Container } from './rollout/traffic.ts';
import { rendererCluster } from './rollout/renderer-cluster.ts';
import { createEdge } from '../../envoy/edge/edge.ts';
import type { HostAddress } from '../../envoy/edge/hosts.ts';
import { Registry } from '../../lib/metrics.ts';
import { createLogger } from '../../lib/log.ts';
import { BUILT_IN_PLANS } from '../../policy/plans.ts';
import { rendererTokenHeaders } from '../../lib/renderer-token.ts';

/** The plan of every key the runs make: its limits pace their traffic. */
const PLAN = 'scale';
const SCALE = BUILT_IN_PLANS[PLAN]!;

/* eslint-disable @typescript-eslint/no-explicit-any */
type Tap = typeof t;
t.setTimeout(600_000);

const DB = `tintype_rollout_${process.pid}_${randomBytes(3).toString('hex')}`;
const dir = mkdtempSync(path.join(os.tmpdir(), 'tintype-rollout-'));
/** Longer than the bootstrap's DNS refresh (5 s), as the default (15 s) is; short for a test. */
const DRAIN_WAIT_S = 7;

let objects: K8sObject[] = [];
let policyEnv: Record<string, string> = {};
let key = '';
let keyId = '';

t.before(async () => {
  await asPgAdmin(`CREATE DATABASE ${DB}`);
  const values = ['--set', [
    `secrets.databaseUrl=postgres://postgres@127.0.0.1:5432/${DB}`, 'secrets.redisUrl=redis://127.0.0.1:6379/9',
    `drainWaitSeconds=${DRAIN_WAIT_S}`,
  ].join(',')];
  objects = await render('default-values.yaml', values);
  const images = tintypeImageConfigs(path.join(ROOT, 'Dockerfile'), 'default-values.yaml');
  const plan = podPlans(objects, images, (d) => ({ namespace: 'render', podName: `${d}-0`, podIP: '127.0.0.1' })).find((p) => p.component === 'policy')!;
  // Two pods on one machine: the ports are the OS's choice; the rest as rendered.
  policyEnv = { ...plan.env, PORT: '0', TINTYPE_POLICY_SETTLE_PORT: '0', TINTYPE_ADMIN_PORT: '0', TINTYPE_LOG_LEVEL: 'info' };
  t.equal(policyEnv['TINTYPE_MIGRATE'], 'wait', 'policy waits for the schema');
  t.equal(policyEnv['TINTYPE_TERM_DRAIN_S'], String(DRAIN_WAIT_S), 'policy drains drainWaitSeconds at SIGTERM');
  // The hook Job, as rendered: `tintype migrate` with its own Secret's DATABASE_URL.
  await runMigrationJob(objects, (env, argv) => {
    const r = runTintype(argv.slice(1), env);
    let out = '';
    return { exited: r.then((x) => { out = x.stdout + x.stderr; return x.code; }), output: () => out };
  });
  const made = await runTintype(['keys', 'create', '--plan', PLAN, '--name', 'rollout'], policyEnv);
  key = /^secret: (\S+)$/m.exec(made.stdout)?.[1] ?? '';
  keyId = /^id: (\S+)$/m.exec(made.stdout)?.[1] ?? '';
  if (key === '') throw new Error(`keys create: ${made.stderr}`);
});

t.teardown(async () => {
  await asPgAdmin(`DROP DATABASE IF EXISTS ${DB} WITH (FORCE)`);
  rmSync(dir, { recursive: true, force: true });
});

function get(port: number, p: string): Promise<number> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: p, agent: false, timeout: 300_000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode!));
    });
    req.once('error', () => resolve(0));
  });
}

async function startPod(name: string, extra: Record<string, string> = {}): Promise<PolicyProcess & { name: string }> {
  const p = await startPolicyProcess({ ...policyEnv, TINTYPE_DATA_DIR: path.join(dir, name), ...extra });
  // The readiness probe, as rendered, before the pod joins the endpoints.
  for (let i = 0; (await get(p.adminPort, '/healthz/ready')) !== 200; i++) {
    if (i > 600) throw new Error(`${name} never ready`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return Object.assign(p, { name });
}

interface Run { checks: Answer[]; settles: Answer[]; deletedAt: number; oldServedAfterDeletion: number; exitedWithinGrace: boolean }

/** The control's pods: SIGTERM stops them at once, as a pod with no drain. */
const NO_DRAIN = { TINTYPE_TERM_DRAIN_S: '0' };

/** One rollout of policy under steady check-and-settle traffic; `drain` false: the control. */
async function rollout(drain: boolean): Promise<Run> {
  const deployment: any = named(objects, 'Deployment', 'tt-policy');
  const spec = deployment.spec.template.spec;
  const graceS: number = spec.terminationGracePeriodSeconds;
  const envoy = parse((named(objects, 'ConfigMap', 'tt-envoy') as any).data['envoy.yaml']);
  const cluster = policyCluster(envoy);
  const old = await startPod(`old-${drain}`, drain ? {} : NO_DRAIN);
  cluster.join(old);
  cluster.refresh();
  const settles: Answer[] = [];
  const traffic = steady(async () => {
    const a = await cluster.check('/v1/ping', `Bearer ${key}`);
    const lease = a.headers['x-tintype-lease'];
    if (a.status === 200 && typeof lease === 'string') {
      settles.push(await cluster.settle(JSON.stringify({ lease, status: 200 }), rendererTokenHeaders(policyEnv['TINTYPE_RENDERER_TOKEN'])).catch((err: Error) => ({ status: 0, headers: {}, body: err.message })));
    }
    return { ...a, at: Date.now() };
  }, periodUnder(SCALE.perMinute));
  const checks = traffic.answers;
  await traffic.more(5);
  // maxSurge: the new pod first, into the endpoints once ready.
  const next = await startPod(`new-${drain}`);
  cluster.join(next);
  cluster.refresh();
  // The old pod is deleted: out of the endpoints, and SIGTERM at once (no preStop).
  // Envoy re-resolves the name at the latest one refresh interval later: then, the worst case.
  cluster.leave(old.name);
  let gone!: () => void;
  let exited = false;
  const pod: Container = {
    term: () => void old.kill('SIGTERM').then(() => { exited = true; gone(); }),
    kill: () => void old.kill('SIGKILL'),
    exited: new Promise<void>((r) => (gone = r)),
  };
  t.equal(spec.containers[0].lifecycle?.preStop, undefined, 'no preStop: nothing reachable begins a drain');
  const stopping = kubeletStop([pod], graceS);
  if (drain) {
    await new Promise((r) => setTimeout(r, cluster.timing.refreshMs));
    t.notOk(exited, `the drain still holds the pod serving when Envoy re-resolves (${cluster.timing.refreshMs} ms)`);
    cluster.refresh();
  } else {
    // Without the drain, gone at SIGTERM; Envoy still holds the host until its refresh: let a check meet it first.
    await traffic.more(3).then(() => cluster.refresh());
  }
  const stopped = await stopping;
  await traffic.more(10);
  await traffic.stop();
  cluster.close();
  await next.kill('SIGTERM');
  const oldServedAfterDeletion = checks.filter((c) => c.host === old.name && (c.at ?? 0) > stopped.deletedAt).length;
  return { checks, settles, deletedAt: stopped.deletedAt, oldServedAfterDeletion, exitedWithinGrace: stopped.exitedWithinGrace };
}

async function meteredSince(id = keyId): Promise<number> {
  const db = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:5432/${DB}` });
  await db.connect();
  try {
    return Number((await db.query('SELECT count(*) AS n FROM usage WHERE key_id = $1 AND metered', [id])).rows[0].n);
  } finally {
    await db.end();
  }
}

t.test('policy restarts under steady traffic: every check answered 200, every settle lands, the ledger meters what was delivered', async (t) => {
  const before = await meteredSince();
  const run = await rollout(true);
  t.ok(run.checks.length > 20, `${run.checks.length} checks`);
  t.same(run.checks.filter((c) => c.status !== 200).map((c) => `${c.status} ${c.body}`), [], 'no answer but 200: not even a 503 busy');
  t.same(run.settles.filter((s) => s.status !== 200 && s.status !== 204).map((s) => `${s.status} ${s.body}`), [], 'every settle landed');
  t.ok(run.oldServedAfterDeletion > 0, `the old pod kept serving after its deletion, through its drain (${run.oldServedAfterDeletion} checks)`);
  t.ok(run.exitedWithinGrace, 'and was gone within its grace period');
  const delivered = run.checks.filter((c) => c.status === 200).length;
  t.equal((await meteredSince()) - before, delivered, 'metered exactly what was delivered');
});

t.test('the control: without the drain, SIGTERM at deletion leaves Envoy checking a pod that is gone: 503 busy', async (t) => {
  const run = await rollout(false);
  const busy = run.checks.filter((c) => c.status === 503);
  t.ok(busy.length > 0, `${busy.length} checks answered 503 busy`);
  for (const b of busy) t.ok(isBusy(b), 'busy carries retry-after');
});

/**
 * The guard's rollout: renderers reach it through its ClusterIP Service (kube-proxy: a new
 * connection goes to a pod in the endpoints; one already open stays where it is). Each render's
 * page holds a tunnel for a while; the old pod is deleted while tunnels are open and new ones keep
 * coming: every tunnel carries its bytes to its end.
 */
t.test('the guard restarts under steady tunnel traffic: every tunnel carries its bytes to its end', async (t) => {
  const rendered = await render('default-values.yaml', ['--set', [
    `secrets.databaseUrl=postgres://postgres@127.0.0.1:5432/${DB}`, 'secrets.redisUrl=redis://127.0.0.1:6379/9',
    `drainWaitSeconds=${DRAIN_WAIT_S}`,
    // The test's stand-in for a public site lives on a loopback address: opened on purpose.
    'guard.allowCidrs[0]=127.0.0.5/32',
  ].join(',')]);
  const images = tintypeImageConfigs(path.join(ROOT, 'Dockerfile'), 'default-values.yaml');
  const plan = podPlans(rendered, images, (d) => ({ namespace: 'render', podName: `${d}-0`, podIP: '127.0.0.1' })).find((p) => p.component === 'guard')!;
  const spec = plan.pod;
  t.equal(plan.container.lifecycle?.preStop, undefined, 'no preStop');
  t.equal(plan.env['TINTYPE_TERM_DRAIN_S'], String(DRAIN_WAIT_S), 'the guard drains drainWaitSeconds at SIGTERM');
  const env = { ...plan.env, PORT: '0', TINTYPE_ADMIN_PORT: '0', TINTYPE_DATA_DIR: path.join(dir, 'guard') };
  const site = net.createServer((c) => c.pipe(c));
  const sitePort = await listenBesideService(site, '127.0.0.5');
  t.teardown(() => site.close());

  const startGuard = (): Promise<{ proc: ReturnType<typeof spawnTintype>; port: number; adminPort: number }> => new Promise((resolve, reject) => {
    let port = 0;
    const proc = spawnTintype('guard', env, (line) => {
      if (line.event === 'guard.listening') port = Number(line.port);
      if (line.event === 'guard.admin_listening') resolve({ proc, port, adminPort: Number(line.port) });
    });
    void proc.exited.then((code) => reject(new Error(`guard exited ${code}`)));
  });
  const old = await startGuard();
  t.teardown(() => old.proc.child.kill('SIGKILL'));
  /** The Service's endpoints as kube-proxy programs them: where a new connection goes. */
  let endpoint = old.port;
  const outcomes: string[] = [];
  let running = true;
  /** A render's page: a tunnel through the guard, 6 exchanges 150 ms apart. */
  const tunnel = async (): Promise<void> => {
    const socket = await new Promise<net.Socket>((resolve, reject) => {
      http.request({ host: '127.0.0.1', port: endpoint, method: 'CONNECT', path: `127.0.0.5:${sitePort}`, agent: false })
        .on('connect', (res, s) => (res.statusCode === 200 ? resolve(s) : reject(new Error(`CONNECT ${res.statusCode}`))))
        .on('error', reject)
        .end();
    });
    try {
      for (let i = 0; i < 6; i++) {
        const echoed = await new Promise<string>((resolve, reject) => {
          socket.once('data', (d: Buffer) => resolve(d.toString('utf8')));
          socket.once('close', () => reject(new Error('tunnel closed')));
          socket.write(`part ${i}`);
        });
        if (echoed !== `part ${i}`) throw new Error(`echoed ${echoed}`);
        await new Promise((r) => setTimeout(r, 150));
      }
    } finally {
      socket.destroy();
    }
  };
  const traffic = (async () => {
    const open: Array<Promise<void>> = [];
    while (running) {
      open.push(tunnel().then(() => { outcomes.push('ok'); }, (err: Error) => { outcomes.push(err.message); }));
      await new Promise((r) => setTimeout(r, 100));
    }
    await Promise.all(open);
  })();
  await new Promise((r) => setTimeout(r, 1_000));
  const next = await startGuard();
  t.teardown(() => next.proc.child.kill('SIGKILL'));
  for (let i = 0; (await get(next.adminPort, '/healthz/ready')) !== 200; i++) {
    if (i > 600) throw new Error('the new guard never ready');
    await new Promise((r) => setTimeout(r, 100));
  }
  // The old pod is deleted: kube-proxy sends new connections to the new pod; the kubelet sends
  // SIGTERM to the old one, which drains and stops within its grace period.
  endpoint = next.port;
  const stopped = await kubeletStop([signals(old.proc)], spec.terminationGracePeriodSeconds);
  running = false;
  await traffic;
  next.proc.child.kill('SIGTERM');
  t.ok(outcomes.length > 10, `${outcomes.length} tunnels`);
  t.same(outcomes.filter((o) => o !== 'ok'), [], 'every tunnel carried its bytes to its end');
  t.ok(stopped.exitedWithinGrace, 'the old guard was gone within its grace period');
});

/** A process's container, as the kubelet signals it. */
const signals = (proc: ReturnType<typeof spawnTintype>): Container => ({
  term: () => proc.child.kill('SIGTERM'),
  kill: () => proc.child.kill('SIGKILL'),
  exited: proc.exited,
});

/** A renderer pod: `tintype renderer` with the rendered container's environment. */
interface RendererPod { name: string; url: string; adminPort: number; proc: ReturnType<typeof spawnTintype> }

interface RendererRun {
  renders: Answer[];
  /** Renders the edge sent to each renderer, and when. */
  picks: Array<{ host: string; at: number }>;
  /** The edge's `tintype_edge_upstream_retries_total` by reason. */
  retries: Record<string, number>;
  old: RendererPod;
  deletedAt: number;
  sigtermAt: number;
  /** When the old pod began to stop: its drain over (`renderer.stopping`). */
  stoppingAt: number;
  /** The run's own key (its plan's per-minute limit is the run's alone). */
  keyId: string;
  exitedWithinGrace: boolean;
}

/**
 * One rollout of the renderer under steady renders through the edge; `drain` false: the control.
 * The pods run without the chart's browser container (Chromium in the renderer's own process) and
 * with their own guard: what the rollout exercises is the renderer's listener, readiness and stop.
 */
async function rendererRollout(t: Pick<Tap, 'equal' | 'notOk'>, drain: boolean): Promise<RendererRun> {
  const rendered = await render('default-values.yaml', ['--set', [
    `secrets.databaseUrl=postgres://postgres@127.0.0.1:5432/${DB}`, 'secrets.redisUrl=redis://127.0.0.1:6379/9',
    `drainWaitSeconds=${DRAIN_WAIT_S}`,
  ].join(',')]);
  const images = tintypeImageConfigs(path.join(ROOT, 'Dockerfile'), 'default-values.yaml');
  const plans = podPlans(rendered, images, (d) => ({ namespace: 'render', podName: `${d}-0`, podIP: '127.0.0.1' }));
  const plan = plans.find((p) => p.component === 'renderer')!;
  t.equal(plan.container.lifecycle?.preStop, undefined, 'the renderer has no preStop');
  t.equal(plan.env['TINTYPE_TERM_DRAIN_S'], String(DRAIN_WAIT_S), 'it drains drainWaitSeconds at SIGTERM');
  const graceS: number = plan.pod.terminationGracePeriodSeconds;
  const envoy = parse((named(rendered, 'ConfigMap', 'tt-envoy') as any).data['envoy.yaml']);
  const made = await runTintype(['keys', 'create', '--plan', PLAN, '--name', `renderer-rollout-${drain}`], policyEnv);
  const runKey = /^secret: (\S+)$/m.exec(made.stdout)?.[1] ?? '';
  const runKeyId = /^id: (\S+)$/m.exec(made.stdout)?.[1] ?? '';
  if (runKey === '') throw new Error(`keys create: ${made.stderr}`);
  const policy = await startPolicyProcess({ ...policyEnv, TINTYPE_DATA_DIR: path.join(dir, `rpolicy-${drain}`) });
  const rendererEnv: Record<string, string> = {
    ...plan.env, PORT: '0', TINTYPE_ADMIN_PORT: '0', HOME: process.env.HOME ?? '/root',
    TINTYPE_POLICY_URL: `http://127.0.0.1:${policy.settlePort}`,
  };
  // The pod's browser container and the guard's Service are not here: Chromium and the guard run in the renderer.
  for (const k of ['TINTYPE_ISOLATION', 'TINTYPE_BROWSER_SOCKET', 'GUARD_URL']) delete rendererEnv[k];

  const stoppingAt = new Map<string, number>();
  const startRenderer = async (name: string, extra: Record<string, string> = {}): Promise<RendererPod> => {
    const pod = await new Promise<RendererPod>((resolve, reject) => {
      const proc = spawnTintype('renderer', { ...rendererEnv, TINTYPE_DATA_DIR: path.join(dir, name), ...extra }, (line) => {
        if (line.event === 'renderer.stopping') stoppingAt.set(name, Date.now());
        if (line.event === 'renderer.listening') resolve({ name, url: `http://127.0.0.1:${line.port}`, adminPort: Number(line.admin_port), proc });
      });
      void proc.exited.then((code) => reject(new Error(`${name} exited ${code}: ${JSON.stringify(proc.lines.slice(-5))}`)));
    });
    // The readiness probe, as rendered (the self-test passed), before the pod joins the endpoints.
    for (let i = 0; (await get(pod.adminPort, String(plan.probe('readinessProbe').path))) !== 200; i++) {
      if (i > 1200) throw new Error(`${name} never ready`);
      await new Promise((r) => setTimeout(r, 100));
    }
    return pod;
  };

  /** The headless Service's endpoints: a pod joins once ready and leaves when deleted. */
  const endpoints = new Map<string, HostAddress>();
  const cluster = rendererCluster(envoy, () => [...endpoints.values()]);
  const picks: RendererRun['picks'] = [];
  const pick = cluster.hosts.pick.bind(cluster.hosts);
  cluster.hosts.pick = (tried) => {
    const h = pick(tried);
    if (h !== undefined) picks.push({ host: h.key, at: Date.now() });
    return h;
  };
  const join = (pod: RendererPod): void => {
    endpoints.set(pod.url, { url: pod.url, healthUrl: `http://127.0.0.1:${pod.adminPort}/healthz/ready` });
  };
  const old = await startRenderer(`rold-${drain}`, drain ? {} : NO_DRAIN);
  join(old);
  const metrics = new Registry();
  const edge = createEdge({
    policyUrl: `http://127.0.0.1:${policy.port}`, rendererUrls: cluster.hosts, host: '127.0.0.1', port: 0,
    openapi: Buffer.from('{}'), authzTimeoutMs: cluster.authzTimeoutMs, renderTimeoutMs: Number(rendererEnv['TINTYPE_RENDER_TIMEOUT_MS']),
    metrics, logger: createLogger('edge', { level: 'warn' }),
  });
  await edge.start();

  let n = 0;
  const client = new http.Agent({ keepAlive: true });
  // Two callers (the plan's concurrency) rendering one after another, paced under its per-minute limit.
  const callers = SCALE.concurrentRenders;
  const traffic = steady(() => call({
    host: '127.0.0.1', port: edge.port(), method: 'POST', path: '/v1/html-to-image', agent: client,
    headers: { authorization: `Bearer ${runKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ html: `<p>rollout ${process.pid} ${drain} ${n++} ${randomBytes(4).toString('hex')}</p>`, width: 64, height: 64 }),
  }), periodUnder(SCALE.perMinute, callers), callers);
  const renders = traffic.answers;
  await traffic.more(4);

  // maxSurge: the new pod first, into the endpoints once ready; Envoy's next refresh adds it and
  // its first health check lets it take renders.
  const next = await startRenderer(`rnew-${drain}`);
  join(next);
  await cluster.hosts.refresh();
  while (!picks.some((p) => p.host === next.url)) await new Promise((r) => setTimeout(r, 100));
  // The old pod is deleted: out of the endpoints, and SIGTERM at once (no preStop).
  // Envoy re-resolves at the latest one refresh interval later: then, the worst case.
  endpoints.delete(old.url);
  const stopping = kubeletStop([signals(old.proc)], graceS);
  await new Promise((r) => setTimeout(r, cluster.timing.refreshMs));
  if (drain) t.notOk(stoppingAt.has(old.name), `the drain still holds the pod serving when Envoy re-resolves (${cluster.timing.refreshMs} ms)`);
  await cluster.hosts.refresh();
  const stopped = await stopping;
  await traffic.more(4);
  await traffic.stop();
  client.destroy();
  await edge.stop();
  next.proc.child.kill('SIGTERM');
  await next.proc.exited;
  if (old.proc.child.exitCode === null) old.proc.child.kill('SIGKILL');
  await policy.kill('SIGTERM');
  const retries: Record<string, number> = {};
  for (const m of metrics.render().matchAll(/^tintype_edge_upstream_retries_total\{reason="([^"]+)"\} (\d+)$/gm)) retries[m[1]!] = Number(m[2]);
  return { renders, picks, retries, old, deletedAt: stopped.deletedAt, sigtermAt: stopped.sigtermAt[0]!, stoppingAt: stoppingAt.get(old.name) ?? stopped.sigtermAt[0]!, exitedWithinGrace: stopped.exitedWithinGrace, keyId: runKeyId };
}

t.test('the renderer restarts under steady renders through the edge: every render 200, none sent to a stopping pod, metered what was delivered', async (t) => {
  const run = await rendererRollout(t, true);
  t.ok(run.renders.length > 10, `${run.renders.length} renders`);
  t.same(run.renders.filter((r) => r.status !== 200).map((r) => `${r.status} ${r.body}`), [], 'no answer but 200: not even a 503 busy');
  t.same(run.retries, {}, 'no render was sent again: none met a renderer that had stopped, none met a busy one');
  const servedAfter = run.picks.filter((p) => p.host === run.old.url && p.at > run.deletedAt).length;
  t.ok(servedAfter > 0, `the old pod kept rendering after its deletion, through its drain (${servedAfter} renders)`);
  t.equal(run.picks.filter((p) => p.host === run.old.url && p.at >= run.stoppingAt).length, 0, 'no render was sent to the old pod once its drain was over and it began to stop');
  t.ok(run.exitedWithinGrace, 'and it was gone within its grace period');
  t.equal(await meteredSince(run.keyId), run.renders.filter((r) => r.status === 200).length, 'metered exactly what was delivered');
});

t.test('the renderer control: without the drain, the edge still sends renders to the pod after its SIGTERM, until it re-resolves', async (t) => {
  const run = await rendererRollout(t, false);
  const late = run.picks.filter((p) => p.host === run.old.url && p.at >= run.sigtermAt).length;
  t.ok(late > 0, `${late} renders were sent to the old pod after its SIGTERM (retries: ${JSON.stringify(run.retries)})`);
  // A 503 the edge answered for a request that reached the stopping pod and went unanswered leaves
  // its lease open until it expires (docs/architecture.md §4 step 6), holding one of the key's
  // places: the callers' next renders may meet 429 concurrent_limit until then.
  let busySeen = false;
  for (const r of run.renders.filter((x) => x.status !== 200)) {
    const heldPlace = busySeen && r.status === 429 && /"error":\s*"concurrent_limit"/.test(r.body);
    t.ok(isBusy(r) || heldPlace, `a render not answered 200 is 503 busy with retry-after, or 429 concurrent_limit after one: ${r.status} ${r.body}`);
    busySeen ||= isBusy(r);
  }
  t.equal(await meteredSince(run.keyId), run.renders.filter((r) => r.status === 200).length, 'metered exactly what was delivered');
});
