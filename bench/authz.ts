/**
 * Policy's check + settle pairs per second and their latency, per store, in one run
 * (docs/performance.md "Running the benchmarks"). Measured as Envoy and renderers call it: the real
 * `bin/tintype policy` process, over HTTP with kept-alive connections, one ext_authz check
 * (`POST /authz/v1/pdf`, a render: quota, window and a place) then its settle (`POST /settle`).
 * Baseline in the same run: a Node HTTP server that answers the same two requests with no
 * work at all, driven by the same client (the HTTP floor of this machine). In-process figures
 * (the policy functions on the store, no HTTP) show what the store itself costs.
 *
 * The claim (docs/architecture.md §4, single-use leases): the same loops again with the
 * renderer's claim (`POST /claim`) between check and settle, as every render now makes it. Beside
 * the pair figures: the claim's p50, and the CPU it adds per render to policy (the process's
 * CPU time per pair, with and without the claim) and to its caller (this process's own CPU,
 * the renderer's side of the call).
 *
 * `npm run bench -- authz [--seconds N] [--connections N] [--pg-connections N] [--keys N]`
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { leaseKeyText } from '../lib/lease.ts';
import { newRendererToken, rendererTokenHeaders } from '../lib/renderer-token.ts';
import { createPolicy } from '../policy/authorize.ts';
import { createKey } from '../policy/keys.ts';
import { type Plans, parsePlans } from '../policy/plans.ts';
import { openPostgresStore } from '../policy/store/postgres.ts';
import { benchDatabase } from './database.ts';
import { openSqliteStore } from '../policy/store/sqlite.ts';
import type { PolicyStore } from '../policy/store/store.ts';
import { cpuSecondsOf, percentile, printMachine, round2 } from './machine.ts';
import { CLAIM_PATH, EXT_AUTHZ_PREFIX, KEY_ID_HEADER, LEASE_HEADER, RATELIMIT_LIMIT_HEADER, RATELIMIT_REMAINING_HEADER, SETTLE_PATH } from '../lib/policy-contract.ts';

const { values: opts } = parseArgs({
  args: process.argv.slice(3),
  options: {
    seconds: { type: 'string', default: '5' },
    connections: { type: 'string', default: '8' },
    'pg-connections': { type: 'string', default: '32' },
    keys: { type: 'string', default: '64' },
  },
});
const SECONDS = Number(opts.seconds);
const CONNECTIONS = Number(opts.connections);
const KEYS = Number(opts.keys);
/** PostgreSQL commits in groups: its throughput grows with the checks in flight, as Envoy's many connections give it. */
const PG_CONNECTIONS = Number(opts['pg-connections']);
const WARMUP_SECONDS = Math.min(1, SECONDS / 2);
const TINTYPE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../bin/tintype');
const PLANS_DOC = { plans: { bench: { monthlyQuota: 1_000_000_000, perMinute: 1_000_000, concurrentRenders: 10_000 } } };
const PLANS: Plans = parsePlans(JSON.stringify(PLANS_DOC));

interface Figures {
  pairs: number;
  perSec: number;
  checkP50: number;
  checkP99: number;
  settleP50: number;
  settleP99: number;
  pairP50: number;
  pairP99: number;
  /** The claim between check and settle, when the loop made one. */
  claimP50?: number;
  claimP99?: number;
  errors: number;
}

function summarize(pairs: number, seconds: number, check: number[], settle: number[], pair: number[], errors: number, claim: number[] = []): Figures {
  return {
    ...(claim.length > 0 ? { claimP50: round2(percentile(claim, 50)), claimP99: round2(percentile(claim, 99)) } : {}),
    pairs,
    perSec: Math.round(pairs / seconds),
    checkP50: round2(percentile(check, 50)),
    checkP99: round2(percentile(check, 99)),
    settleP50: round2(percentile(settle, 50)),
    settleP99: round2(percentile(settle, 99)),
    pairP50: round2(percentile(pair, 50)),
    pairP99: round2(percentile(pair, 99)),
    errors,
  };
}

function print(name: string, f: Figures): void {
  console.log(`${name.padEnd(28)} ${String(f.perSec).padStart(6)} pairs/s  check p50 ${f.checkP50} ms p99 ${f.checkP99} ms  ` +
    (f.claimP50 === undefined ? '' : `claim p50 ${f.claimP50} ms p99 ${f.claimP99} ms  `) +
    `settle p50 ${f.settleP50} ms p99 ${f.settleP99} ms  pair p50 ${f.pairP50} ms p99 ${f.pairP99} ms${f.errors > 0 ? `  errors ${f.errors}` : ''}`);
}

/** One request on a kept-alive connection; answers the status and the lease header. */
function call(agent: http.Agent, port: number, method: string, p: string, headers: Record<string, string>, body?: string): Promise<[number, string | undefined]> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path: p, headers, agent }, (res) => {
      res.resume();
      res.on('end', () => resolve([res.statusCode ?? 0, res.headers[LEASE_HEADER] as string | undefined]));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * One check: answers the lease, or undefined when it was not granted. One settle: answers
 * whether it was acknowledged. `i` picks the key.
 */
interface Pair {
  check(i: number): Promise<string | undefined>;
  /** The renderer's claim, when the loop makes one: whether this attempt took the lease. */
  claim?(lease: string): Promise<boolean>;
  settle(lease: string): Promise<boolean>;
}

/** Runs `loops` check-then-settle loops for `seconds` after a warm-up; times each half. */
async function drive(loops: number, seconds: number, p: Pair): Promise<Figures> {
  const check: number[] = [];
  const claim: number[] = [];
  const settle: number[] = [];
  const pair: number[] = [];
  let errors = 0;
  let pairs = 0;
  const warmEnd = performance.now() + WARMUP_SECONDS * 1000;
  const end = warmEnd + seconds * 1000;
  const loop = async (w: number): Promise<void> => {
    for (let i = w; performance.now() < end; i += loops) {
      const t0 = performance.now();
      const lease = await p.check(i);
      const t1 = performance.now();
      if (lease === undefined) {
        errors++;
        continue;
      }
      if (p.claim !== undefined && !(await p.claim(lease))) errors++;
      const tc = performance.now();
      if (!(await p.settle(lease))) errors++;
      const t2 = performance.now();
      // Let the other loops in: in-process SQLite answers synchronously and would never yield.
      await new Promise((r) => setImmediate(r));
      if (t0 < warmEnd) continue;
      pairs++;
      check.push(t1 - t0);
      if (p.claim !== undefined) claim.push(tc - t1);
      settle.push(t2 - tc);
      pair.push(t2 - t0);
    }
  };
  await Promise.all(Array.from({ length: loops }, (_, w) => loop(w)));
  return summarize(pairs, seconds, check, settle, pair, errors, claim);
}

/** Policy's two listeners: ext_authz (Envoy's) and claim + settle (the renderers'). */
interface Ports {
  authz: number;
  settle: number;
}

/** The token the bench's renderer calls carry (lib/renderer-token.ts), as the policy it starts holds it. */
const BENCH_RENDERER_TOKEN = newRendererToken();

/**
 * Check + settle pairs over HTTP on `connections` kept-alive connections, as Envoy and renderers
 * call, with the renderer's claim between them when `claim` is set.
 */
async function driveHttp(ports: Ports, secrets: string[], seconds: number, connections = CONNECTIONS, claim = false): Promise<Figures> {
  const edge = new http.Agent({ keepAlive: true, maxSockets: connections });
  const renderers = new http.Agent({ keepAlive: true, maxSockets: connections });
  const post = (p: string, payload: unknown) => {
    const body = JSON.stringify(payload);
    return call(renderers, ports.settle, 'POST', p, { 'content-type': 'application/json', 'content-length': String(body.length), ...rendererTokenHeaders(BENCH_RENDERER_TOKEN) }, body);
  };
  try {
    return await drive(connections, seconds, {
      async check(i) {
        const [status, lease] = await call(edge, ports.authz, 'POST', `${EXT_AUTHZ_PREFIX}/v1/pdf`, { authorization: `Bearer ${secrets[i % secrets.length]}` });
        return status === 200 ? lease : undefined;
      },
      ...(claim ? { claim: async (lease: string) => (await post(CLAIM_PATH, { lease }))[0] === 204 } : {}),
      async settle(lease) {
        return (await post(SETTLE_PATH, { lease, status: 200, cache: 'miss' }))[0] === 204;
      },
    });
  } finally {
    edge.destroy();
    renderers.destroy();
  }
}

/** What the claim adds per render: CPU (policy's and its caller's) and latency, beside the same loops without it. */
interface ClaimCost {
  without: Figures;
  with: Figures;
  claimP50Ms: number;
  pairP50AddedMs: number;
  policyCpuMsPerRenderWithout: number;
  policyCpuMsPerRenderWith: number;
  policyCpuMsAddedPerRender: number;
  callerCpuMsAddedPerRender: number;
}

/** CPU ms of `pid` and of this process while `run` runs, per completed pair. */
async function perPair(pid: number, run: () => Promise<Figures>): Promise<{ f: Figures; policyMs: number; callerMs: number }> {
  const p0 = cpuSecondsOf(pid);
  const c0 = process.cpuUsage();
  const f = await run();
  const c = process.cpuUsage(c0);
  const pairs = Math.max(1, f.pairs * (1 + WARMUP_SECONDS / SECONDS));
  return { f, policyMs: ((cpuSecondsOf(pid) - p0) * 1000) / pairs, callerMs: (c.user + c.system) / 1000 / pairs };
}

/** CPU per render is a fraction of a millisecond: three places. */
const round3 = (n: number): number => Math.round(n * 1000) / 1000;

async function claimCost(pid: number, ports: Ports, secrets: string[]): Promise<ClaimCost> {
  const without = await perPair(pid, () => driveHttp(ports, secrets, SECONDS));
  const withClaim = await perPair(pid, () => driveHttp(ports, secrets, SECONDS, CONNECTIONS, true));
  return {
    without: without.f,
    with: withClaim.f,
    claimP50Ms: withClaim.f.claimP50 ?? 0,
    pairP50AddedMs: round2(withClaim.f.pairP50 - without.f.pairP50),
    policyCpuMsPerRenderWithout: round3(without.policyMs),
    policyCpuMsPerRenderWith: round3(withClaim.policyMs),
    policyCpuMsAddedPerRender: round3(withClaim.policyMs - without.policyMs),
    callerCpuMsAddedPerRender: round3(withClaim.callerMs - without.callerMs),
  };
}

/** The policy functions on the store, no HTTP, `CONNECTIONS` loops at once. */
async function driveInProcess(store: PolicyStore, secrets: string[], seconds: number): Promise<Figures> {
  const policy = createPolicy({ store, plans: PLANS, clock: Date.now, leaseTtlMs: 60_000 });
  return drive(CONNECTIONS, seconds, {
    async check(i) {
      const d = await policy.check(`Bearer ${secrets[i % secrets.length]}`, 'pdf');
      return d.allow ? d.leaseId : undefined;
    },
    async settle(lease) {
      return (await policy.settle({ lease, status: 200, cache: 'miss' })) === 'settled';
    },
  });
}

const REFUSALS = ['missing', 'malformed', 'unknown', 'revoked'] as const;
type Refusal = (typeof REFUSALS)[number];

/**
 * The four 401 cases (spec Part 5 rule 4: indistinguishable), interleaved one request at a time
 * on one connection so that drift on a shared machine falls on all four alike. Answers p50 per case.
 */
async function refusalTimes(port: number, live: string, revoked: string, rounds: number): Promise<Record<Refusal, number>> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const headers: Record<Refusal, Record<string, string>> = {
    missing: {},
    malformed: { authorization: `Bearer ${live}!` },
    unknown: { authorization: `Bearer sk_${randomBytes(32).toString('base64url')}` },
    revoked: { authorization: `Bearer ${revoked}` },
  };
  const samples: Record<Refusal, number[]> = { missing: [], malformed: [], unknown: [], revoked: [] };
  for (let i = 0; i < rounds; i++) {
    for (const c of REFUSALS) {
      const t0 = performance.now();
      const [status] = await call(agent, port, 'GET', `${EXT_AUTHZ_PREFIX}/v1/ping`, headers[c]);
      if (status !== 401) throw new Error(`${c}: answered ${status}`);
      samples[c].push(performance.now() - t0);
    }
  }
  agent.destroy();
  return Object.fromEntries(REFUSALS.map((c) => [c, round2(percentile(samples[c], 50))])) as Record<Refusal, number>;
}

/** Starts a child and waits for the JSON line that names its port (and policy's settle port). */
function startChild(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ ports: Ports; child: ChildProcess }> {
  const child = spawn(command, args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let out = '';
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${command} exited (${code}):\n${out}`)));
    child.stderr!.on('data', (c: Buffer) => {
      out += c.toString('utf8');
      const m = /"port":(\d+)/.exec(out);
      if (m !== null) {
        child.removeAllListeners('exit');
        child.stderr!.removeAllListeners('data');
        child.stderr!.resume();
        // The floor server has one port: it answers every path.
        const settle = /"settle_port":(\d+)/.exec(out);
        resolve({ ports: { authz: Number(m[1]), settle: Number(settle?.[1] ?? m[1]) }, child });
      }
    });
  });
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const gone = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await gone;
}

/** The same two answers with no work: the floor any HTTP authorization server stands on. */
const FLOOR_SERVER = `
  const http = require('node:http');
  const s = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.url === ${JSON.stringify(SETTLE_PATH)} || req.url === ${JSON.stringify(CLAIM_PATH)}) { res.writeHead(204); res.end(); return; }
      res.writeHead(200, { ${JSON.stringify(LEASE_HEADER)}: 'l' + Math.random().toString(36).slice(2), ${JSON.stringify(KEY_ID_HEADER)}: 'key_x',
        ${JSON.stringify(RATELIMIT_LIMIT_HEADER)}: '100', ${JSON.stringify(RATELIMIT_REMAINING_HEADER)}: '99', 'content-length': '0' });
      res.end();
    });
  });
  s.keepAliveTimeout = 120000;
  s.listen(0, '127.0.0.1', () => process.stderr.write(JSON.stringify({ port: s.address().port }) + '\\n'));
  process.on('SIGTERM', () => process.exit(0));
`;

interface Home {
  env: Record<string, string>;
  open(): PolicyStore;
  drop(): Promise<void>;
}

async function home(kind: 'sqlite' | 'postgres', dir: string): Promise<Home> {
  if (kind === 'sqlite') {
    const data = path.join(dir, 'sqlite');
    return { env: { TINTYPE_DATA_DIR: data }, open: () => openSqliteStore({ dataDir: data }), drop: async () => {} };
  }
  const db = await benchDatabase('tintype_bench', { migrate: false });
  return {
    env: { TINTYPE_DATA_DIR: path.join(dir, 'pg'), DATABASE_URL: db.url },
    open: () => openPostgresStore({ url: db.url, poolSize: 10 }),
    drop: db.drop,
  };
}

async function measureStore(kind: 'sqlite' | 'postgres', dir: string, plansFile: string) {
  const h = await home(kind, dir);
  const store = h.open();
  try {
    await store.migrate();
    const secrets: string[] = [];
    for (let i = 0; i < KEYS; i++) secrets.push((await createKey(store, PLANS, { plan: 'bench' })).secret);
    const gone = await createKey(store, PLANS, { plan: 'bench' });
    await store.revokeKey(gone.id, Date.now());
    const env = {
      PATH: process.env.PATH, HOME: process.env.HOME, PORT: '0', TINTYPE_ADMIN_PORT: '0', TINTYPE_PLANS: plansFile, TINTYPE_LOG_LEVEL: 'info',
      TINTYPE_LEASE_SIGNING_KEY: leaseKeyText(generateKeyPairSync('ed25519').privateKey), TINTYPE_RENDERER_TOKEN: BENCH_RENDERER_TOKEN, ...h.env,
    };
    const { ports, child } = await startChild(TINTYPE, ['policy'], env);
    let spread: Figures;
    let hot: Figures;
    let wide: Figures | undefined;
    let refusals: Record<Refusal, number> | undefined;
    let claim: ClaimCost;
    try {
      spread = await driveHttp(ports, secrets, SECONDS);
      print(`${kind} http, ${KEYS} keys`, spread);
      if (kind === 'postgres') {
        wide = await driveHttp(ports, secrets, SECONDS, PG_CONNECTIONS);
        print(`${kind} http, ${PG_CONNECTIONS} connections`, wide);
      }
      claim = await claimCost(child.pid!, ports, secrets);
      print(`${kind} http, no claim`, claim.without);
      print(`${kind} http, with the claim`, claim.with);
      console.log(`${kind} the claim per render: p50 ${claim.claimP50Ms} ms, pair p50 +${claim.pairP50AddedMs} ms; ` +
        `policy CPU ${claim.policyCpuMsPerRenderWithout} -> ${claim.policyCpuMsPerRenderWith} ms (+${claim.policyCpuMsAddedPerRender} ms), caller CPU +${claim.callerCpuMsAddedPerRender} ms`);
      hot = await driveHttp(ports, secrets.slice(0, 1), SECONDS);
      print(`${kind} http, 1 hot key`, hot);
      refusals = await refusalTimes(ports.authz, secrets[0]!, gone.secret, Math.max(200, Math.round(SECONDS * 200)));
      console.log(`${kind} 401 p50 by case (ms): ${REFUSALS.map((c) => `${c} ${refusals![c]}`).join(', ')}`);
    } finally {
      await stopChild(child);
    }
    const inProcess = await driveInProcess(store, secrets, SECONDS);
    print(`${kind} in-process`, inProcess);
    return { spread, hot, wide, inProcess, refusals: refusals!, claim: claim! };
  } finally {
    await store.close();
    await h.drop();
  }
}

printMachine();
const cpu = os.loadavg()[0]!;
console.log(`load average at start: ${cpu.toFixed(2)}; ${SECONDS} s per figure after ${WARMUP_SECONDS} s warm-up; ${CONNECTIONS} connections (PostgreSQL also ${PG_CONNECTIONS})`);
const dir = mkdtempSync(path.join(os.tmpdir(), 'tintype-bench-authz-'));
try {
  const plansFile = path.join(dir, 'plans.json');
  writeFileSync(plansFile, JSON.stringify(PLANS_DOC));
  const floorProc = await startChild(process.execPath, ['-e', FLOOR_SERVER], { PATH: process.env.PATH });
  let floor: Figures;
  try {
    floor = await driveHttp(floorProc.ports, ['sk_' + 'b'.repeat(43)], SECONDS);
    print('baseline: empty HTTP server', floor);
  } finally {
    await stopChild(floorProc.child);
  }
  const sqlite = await measureStore('sqlite', dir, plansFile);
  const postgres = await measureStore('postgres', dir, plansFile);
  console.log(`targets (2 cores): sqlite >= 3000 pairs/s with p99 <= 5 ms; postgres >= 1000 pairs/s`);
  console.log(JSON.stringify({
    bench: 'authz',
    connections: CONNECTIONS,
    keys: KEYS,
    seconds: SECONDS,
    sqlite_per_s: sqlite.spread.perSec,
    sqlite_check_p50_ms: sqlite.spread.checkP50,
    sqlite_check_p99_ms: sqlite.spread.checkP99,
    sqlite_settle_p50_ms: sqlite.spread.settleP50,
    sqlite_settle_p99_ms: sqlite.spread.settleP99,
    sqlite_pair_p99_ms: sqlite.spread.pairP99,
    sqlite_hot_key_per_s: sqlite.hot.perSec,
    sqlite_in_process_per_s: sqlite.inProcess.perSec,
    sqlite_401_p50_ms: sqlite.refusals,
    postgres_per_s: postgres.spread.perSec,
    postgres_check_p50_ms: postgres.spread.checkP50,
    postgres_check_p99_ms: postgres.spread.checkP99,
    postgres_settle_p50_ms: postgres.spread.settleP50,
    postgres_settle_p99_ms: postgres.spread.settleP99,
    postgres_pair_p99_ms: postgres.spread.pairP99,
    postgres_wide_connections: PG_CONNECTIONS,
    postgres_wide_per_s: postgres.wide?.perSec,
    postgres_wide_check_p99_ms: postgres.wide?.checkP99,
    postgres_hot_key_per_s: postgres.hot.perSec,
    postgres_in_process_per_s: postgres.inProcess.perSec,
    postgres_401_p50_ms: postgres.refusals,
    // The single-use claim (docs/architecture.md §4): what one more policy round trip costs a render.
    sqlite_claim_p50_ms: sqlite.claim.claimP50Ms,
    sqlite_claim_pair_p50_added_ms: sqlite.claim.pairP50AddedMs,
    sqlite_claim_policy_cpu_ms_per_render: { without: sqlite.claim.policyCpuMsPerRenderWithout, with: sqlite.claim.policyCpuMsPerRenderWith, added: sqlite.claim.policyCpuMsAddedPerRender },
    sqlite_claim_caller_cpu_ms_added_per_render: sqlite.claim.callerCpuMsAddedPerRender,
    sqlite_with_claim_per_s: sqlite.claim.with.perSec,
    postgres_claim_p50_ms: postgres.claim.claimP50Ms,
    postgres_claim_pair_p50_added_ms: postgres.claim.pairP50AddedMs,
    postgres_claim_policy_cpu_ms_per_render: { without: postgres.claim.policyCpuMsPerRenderWithout, with: postgres.claim.policyCpuMsPerRenderWith, added: postgres.claim.policyCpuMsAddedPerRender },
    postgres_claim_caller_cpu_ms_added_per_render: postgres.claim.callerCpuMsAddedPerRender,
    postgres_with_claim_per_s: postgres.claim.with.perSec,
    errors: floor.errors + sqlite.spread.errors + sqlite.hot.errors + postgres.spread.errors + postgres.hot.errors + (postgres.wide?.errors ?? 0),
    baseline: 'empty node http server, same client',
    baseline_per_s: floor.perSec,
    baseline_check_p99_ms: floor.checkP99,
    load_average: round2(cpu),
  }));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
