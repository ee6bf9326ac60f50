/**
 * Policy on the Redis counters store as the chart runs it (docs/helm.md "The meter on Redis"):
 * the chart rendered with policy.counters.store redis, its own URL, and both Redis selectors
 * narrowed; then, as a kubelet would, the migration Job's container (its own environment, which
 * names no Redis) in a pod of its own, and policy's, each in a network namespace that reaches
 * only what the rendered NetworkPolicies allow (wiring/pod-net.ts). PostgreSQL, the cache's Redis
 * and the counters' Redis are pods of their own relaying to this machine's PostgreSQL and to two
 * redis-server processes started here; policy's URL names the counters' user docs/helm.md gives
 * (its keys and commands only), and that Redis has no password-less default user.
 *
 * Then a key made in the policy pod (`tintype keys create`, its environment), one check, claim
 * and settle, and what each setting names was reached: the key's generation and the month's
 * count are in the counters' Redis and nothing of the meter in the cache's; the call is in the
 * release's PostgreSQL ledger (the stream written by policy's sink) and `tintype usage` in the
 * pod reads it. Last, who reaches which Redis: policy the counters' only, a renderer the cache's
 * only, the migration Job neither.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import { asPgAdmin } from '../lib/pg-admin.ts';
import t from 'tap';
import { NAMESPACE, ROOT, render, type K8sObject } from '../helm.ts';
import { openPaths } from './network-policy-eval.ts';
import { createPodNet, podNetAddresses, type PodNet } from './wiring/pod-net.ts';
import { podPlans, type PodPlan } from './wiring/pods.ts';
import { connectFrom, podProcesses, RELAY_JS, tintypeArgv, type Proc } from './wiring/pod-process.ts';
import { runMigrationJob } from './wiring/migrate.ts';
import { tintypeImageConfigs } from './tintype-image.ts';
import { startRedis } from '../e2e/reliability/instances.ts';
import { TEST_LEASE_ENV } from '../lib/leases.ts';
import { CLAIM_PATH, EXT_AUTHZ_PREFIX, LEASE_HEADER, SETTLE_PATH } from '../../lib/policy-contract.ts';
import { RENDERER_TOKEN_HEADER } from '../../lib/renderer-token.ts';
import { KEY_GENERATION, keyPrefix } from '../../policy/store/redis/store.ts';

/* eslint-disable @typescript-eslint/no-explicit-any */

t.setTimeout(300_000);

/** Another network than test/chart/wiring.test.ts's for the same process id, so both can run at once. */
const ID = 1 + ((process.pid + 125) % 250);
const DB = `tintype_counters_wiring_${process.pid}_${randomBytes(3).toString('hex')}`;
const HERE = { 'kubernetes.io/metadata.name': NAMESPACE };
const READY_WITHIN_MS = 120_000;
/** The stand-in backends: their labels (the values below narrow the chart's Redis selectors to them), port and host name. */
const BACKENDS = {
  postgresql: { labels: { 'app.kubernetes.io/name': 'postgresql' }, port: 5432 },
  cache: { labels: { 'app.kubernetes.io/name': 'redis', 'app.kubernetes.io/instance': 'cache' }, port: 6379 },
  counters: { labels: { 'app.kubernetes.io/name': 'redis', 'app.kubernetes.io/instance': 'counters' }, port: 6379 },
} as const;

/** Policy's Redis user, as docs/helm.md "The meter on Redis" gives it: the counters' keys and commands only. */
const COUNTERS_USER = 'tintype-counters';
const COUNTERS_PASSWORD = randomBytes(12).toString('hex');
const COUNTERS_ACL = `on >${COUNTERS_PASSWORD} resetkeys ~tintype:{k:* ~tintype:lease:* ~tintype:ledger ~tintype:expiry ~tintype:keys:* ~tintype:egress:* resetchannels -@all +@read +@write +@scripting +@connection -@dangerous +info +time`;

const dir = mkdtempSync('/var/tmp/tintype-counters-wiring-');
/** Where each pod sees this checkout (test/chart/wiring.test.ts says why outside /tmp). */
const APP = path.join(dir, 'app');
const inPod = (p: string): string => (p === ROOT || p.startsWith(ROOT + path.sep) ? APP + p.slice(ROOT.length) : p);
const PATH = `${path.join(dir, 'bin')}:${inPod(path.dirname(process.execPath))}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`;
const podProcs = podProcesses(ROOT, APP);
let podNet: PodNet | undefined;
let dbMade = false;
let objects: K8sObject[] = [];
let policyPlan: PodPlan | undefined;
const redises: Record<'cache' | 'counters', Awaited<ReturnType<typeof startRedis>> | undefined> = { cache: undefined, counters: undefined };

function podTmp(name: string): string {
  const d = path.join(dir, 'pods', name);
  mkdirSync(d, { recursive: true, mode: 0o1777 });
  return d;
}

function request(o: { host: string; port: number; path: string; method: string; headers?: Record<string, string>; body?: string }): Promise<{ status: number; body: string; headers: http.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: o.host, port: o.port, path: o.path, method: o.method, headers: o.headers, agent: false, timeout: 10_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, body: Buffer.concat(chunks).toString('utf8'), headers: res.headers }));
      res.on('error', reject);
    });
    req.once('timeout', () => req.destroy(new Error('timeout')));
    req.once('error', reject);
    req.end(o.body);
  });
}

/** `tintype …` in the policy pod with its environment, as `kubectl exec deployment/…-policy --` runs it. */
async function inPolicyPod(args: string[]): Promise<string> {
  const p = podProcs.run(`tintype ${args[0]}`, podNet!.ns('policy'), podTmp('policy'), { ...policyPlan!.env, PATH }, ['tintype', ...args]);
  const code = await p.exited;
  if (code !== 0) throw new Error(`tintype ${args.join(' ')} in the policy pod exited ${code}:\n${p.output()}`);
  return p.output();
}

async function step(what: string, fn: () => unknown): Promise<void> {
  try {
    await fn();
  } catch (err) {
    process.stderr.write(`counters wiring clean-up: ${what}: ${err instanceof Error ? err.message : String(err)}\n`);
  }
}

t.teardown(async () => {
  await step('processes', podProcs.stopAll);
  await step('network', () => podNet?.destroy());
  if (dbMade) {
    await step('database', () => asPgAdmin(`DROP DATABASE IF EXISTS ${DB} WITH (FORCE)`));
  }
  for (const r of Object.values(redises)) await step('redis', () => r?.destroy());
  await step('files', () => rmSync(dir, { recursive: true, force: true }));
});

const rendererToken = TEST_LEASE_ENV.TINTYPE_RENDERER_TOKEN;
let policyProc: Proc | undefined;

t.before(async () => {
  await asPgAdmin(`CREATE DATABASE ${DB}`);
  dbMade = true;
  redises.cache = await startRedis();
  redises.counters = await startRedis();
  // The user docs/helm.md gives policy, and no password-less default user.
  const setup = new Redis(redises.counters.url);
  await setup.call('ACL', 'SETUSER', COUNTERS_USER, ...COUNTERS_ACL.split(' '));
  await setup.call('ACL', 'SETUSER', 'default', 'off');
  setup.disconnect();

  const values = path.join(dir, 'counters-values.yaml');
  writeFileSync(values, [
    'secrets:',
    `  databaseUrl: postgres://postgres@postgresql:${BACKENDS.postgresql.port}/${DB}`,
    `  redisUrl: redis://cache:${BACKENDS.cache.port}`,
    `  countersUrl: redis://${COUNTERS_USER}:${COUNTERS_PASSWORD}@counters:${BACKENDS.counters.port}`,
    `  leaseSigningKey: ${TEST_LEASE_ENV.TINTYPE_LEASE_SIGNING_KEY}`,
    `  leasePublicKeys: ${TEST_LEASE_ENV.TINTYPE_LEASE_PUBLIC_KEYS}`,
    `  guardTokenKey: ${TEST_LEASE_ENV.GUARD_TOKEN_KEY}`,
    `  rendererToken: ${rendererToken}`,
    'policy:',
    '  replicas: 1',
    '  counters:',
    '    store: redis',
    '  ledgerMonths: 12',
    'networkPolicy:',
    '  redis:',
    '    podSelector:',
    `      matchLabels: ${JSON.stringify(BACKENDS.cache.labels)}`,
    '  counters:',
    '    podSelector:',
    `      matchLabels: ${JSON.stringify(BACKENDS.counters.labels)}`,
    '',
  ].join('\n'));
  objects = await render('default-values.yaml', ['-f', values]);
  const images = tintypeImageConfigs(path.join(ROOT, 'Dockerfile'), 'default-values.yaml', ['-f', values]);
  const plans = podPlans(objects, images, (d) => ({ namespace: NAMESPACE, podName: `${d}-0`, podIP: '' }));
  policyPlan = plans.find((p) => p.component === 'policy');
  const renderer = plans.find((p) => p.component === 'renderer')!;
  const job: any = objects.find((o) => o.kind === 'Job');

  // The pods: policy (run), a renderer and the migration Job's (their labels and rules: the Job
  // runs in its own), and the three backends.
  const pods: Record<string, { labels: Record<string, string>; ports: number[] }> = {
    policy: { labels: policyPlan!.labels, ports: Object.values(policyPlan!.ports) },
    renderer: { labels: renderer.labels, ports: Object.values(renderer.ports) },
    migrate: { labels: job.spec.template.metadata.labels, ports: [] },
    ...Object.fromEntries(Object.entries(BACKENDS).map(([name, b]) => [name, { labels: b.labels, ports: [b.port] }])),
  };
  const names = Object.keys(pods);
  const hosts: Record<string, string[]> = { postgresql: ['postgresql'], cache: ['cache'], counters: ['counters'] };
  for (const s of objects.filter((o) => o.kind === 'Service') as any[]) {
    if (Object.entries(s.spec.selector ?? {}).every(([k, v]) => policyPlan!.labels[k] === v)) hosts[s.metadata.name] = ['policy'];
  }
  const addresses = podNetAddresses(ID, names);
  const endpoints = Object.fromEntries(Object.entries(pods).map(([name, p]) => [name, { labels: p.labels, namespace: HERE, ip: addresses.addr(name) }]));
  const ports = Object.fromEntries(Object.entries(pods).map(([name, p]) => [name, p.ports]));
  podNet = createPodNet(ID, names, hosts, openPaths(objects.filter((o) => o.kind === 'NetworkPolicy'), HERE, endpoints, ports));
  const pn = podNet;

  mkdirSync(path.join(dir, 'bin'));
  mkdirSync(APP);
  symlinkSync(path.join(APP, 'bin/tintype'), path.join(dir, 'bin', 'tintype'));
  const upstream = { postgresql: ['127.0.0.1', 5432], cache: ['127.0.0.1', redises.cache.port], counters: ['127.0.0.1', redises.counters.port] } as const;
  for (const [name, [host, port]] of Object.entries(upstream)) {
    const sock = path.join(dir, `${name}.sock`);
    await podProcs.relay(sock, host, port);
    podProcs.run(name, pn.ns(name), podTmp(name), { PATH }, ['node', '-e', RELAY_JS, pn.addr(name), String(BACKENDS[name as keyof typeof BACKENDS].port), sock]);
  }
  await Promise.all(podProcs.procs.map((p) => p.waitFor(/relay\.ready/)));

  // The hook Job first, in its own pod: it names no Redis, and its rules reach PostgreSQL alone.
  await runMigrationJob(objects, (env, argv) => podProcs.run('migrate', pn.ns('migrate'), podTmp('migrate'), { ...env, PATH }, argv));
  policyProc = podProcs.run(policyPlan!.deployment, pn.ns('policy'), podTmp('policy'), { ...policyPlan!.env, PATH }, tintypeArgv(policyPlan!));
  const { path: readyPath, port } = policyPlan!.probe('readinessProbe');
  const deadline = Date.now() + READY_WITHIN_MS;
  let ended = false;
  void policyProc.exited.then(() => { ended = true; });
  for (;;) {
    if (ended) throw new Error(`policy exited before it was ready:\n${policyProc.output().slice(-3000)}`);
    const r = await request({ host: pn.addr('policy'), port, path: readyPath, method: 'GET' }).catch(() => undefined);
    if (r?.status === 200) break;
    if (Date.now() > deadline) throw new Error(`policy not ready within ${READY_WITHIN_MS} ms:\n${policyProc.output().slice(-3000)}`);
    await new Promise((r2) => setTimeout(r2, 250));
  }
});

t.test('a key, a check, a claim and a settle: the meter in the counters Redis, the ledger in PostgreSQL', async (t) => {
  const made = await inPolicyPod(['keys', 'create', '--plan', 'free', '--name', 'counters']);
  const key = /^secret: (\S+)$/m.exec(made)?.[1] ?? '';
  const keyId = /^id: (\S+)$/m.exec(made)?.[1] ?? '';
  t.ok(key !== '' && keyId !== '', 'tintype keys create in the policy pod');
  const counters = new Redis(redises.counters!.url, { username: COUNTERS_USER, password: COUNTERS_PASSWORD });
  const cache = new Redis(redises.cache!.url);
  t.teardown(() => { counters.disconnect(); cache.disconnect(); });
  t.equal(await counters.get(KEY_GENERATION), '1', "the key's creation moved the generation in the counters' Redis (TINTYPE_COUNTERS_URL reached)");

  const policy = podNet!.addr('policy');
  const check = await request({ host: policy, port: policyPlan!.ports['http']!, path: `${EXT_AUTHZ_PREFIX}/v1/html-to-image`, method: 'POST', headers: { authorization: `Bearer ${key}` } });
  t.equal(check.status, 200, check.body);
  const lease = check.headers[LEASE_HEADER] as string;
  t.ok(lease, 'a lease');
  const month = new Date().toISOString().slice(0, 7);
  t.equal(await counters.get(`${keyPrefix(keyId)}m:${month}`), '1', "the month's reservation is counted in the counters' Redis");
  const asRenderer = (p: string, body: object) => request({ host: policy, port: policyPlan!.ports['settle']!, path: p, method: 'POST',
    headers: { [RENDERER_TOKEN_HEADER]: `Bearer ${rendererToken}`, 'content-type': 'application/json' }, body: JSON.stringify({ lease, ...body }) });
  t.equal((await asRenderer(CLAIM_PATH, {})).status, 204, 'claimed');
  t.equal((await asRenderer(SETTLE_PATH, { status: 200, cache: 'miss' })).status, 204, 'settled');
  t.same(await cache.keys('tintype:*'), [], "nothing of the meter in the cache's Redis");

  // The ledger: the settle's event on the counters' stream, written to PostgreSQL by policy's sink.
  const db = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:5432/${DB}` });
  await db.connect();
  let rows: Array<{ operation: string; status: number; metered: boolean }> = [];
  try {
    const until = Date.now() + 30_000;
    for (;;) {
      rows = (await db.query('SELECT operation, status, metered FROM usage WHERE key_id = $1', [keyId])).rows;
      if (rows.length > 0 || Date.now() > until) break;
      await new Promise((r) => setTimeout(r, 200));
    }
  } finally {
    await db.end();
  }
  t.same(rows, [{ operation: 'html-to-image', status: 200, metered: true }], "the call in the release's PostgreSQL ledger");
  const usage = JSON.parse(await inPolicyPod(['usage', '--key', keyId, '--format', 'json']));
  t.match(usage.keys[0], { keyId, metered: 1, inFlight: 0 }, 'tintype usage in the policy pod reads it');
});

t.test("policy reaches the counters' Redis and PostgreSQL; renderers the cache's only; the migration Job neither Redis", async (t) => {
  const n = podNet!;
  const a = (p: string): string => n.addr(p);
  const [fromPolicy, fromRenderer, fromMigrate] = await Promise.all([
    connectFrom(n.ns('policy'), [[a('counters'), 6379], [a('postgresql'), 5432], [a('cache'), 6379]]),
    connectFrom(n.ns('renderer'), [[a('cache'), 6379], [a('counters'), 6379]]),
    connectFrom(n.ns('migrate'), [[a('postgresql'), 5432], [a('counters'), 6379], [a('cache'), 6379]]),
  ]);
  t.same(Object.values(fromPolicy), ['connected', 'connected', 'EACCES'], "policy: the counters' Redis and PostgreSQL, not the cache's");
  t.same(Object.values(fromRenderer), ['connected', 'EACCES'], "a renderer (and Chromium beside it): the cache's Redis, never the counters'");
  t.same(Object.values(fromMigrate), ['connected', 'EACCES', 'EACCES'], 'the migration Job: PostgreSQL alone');
  t.notOk(policyProc!.child.exitCode !== null, 'policy still runs');
});
