/**
 * The meter at scale (docs/performance.md "Scaling out"): check + claim + settle triples through
 * K = 1, 2 and 3 real `bin/tintype policy` processes, on Redis counters beside PostgreSQL and, as
 * the baseline in the same run, on the PostgreSQL store alone (both running at once, each workload
 * driven through one store and then the other); 100,000 keys, uniform and with one key taking half
 * the traffic (limits that do not bind). Machine CPU per render is summed from /proc
 * over every process of the meter: the policy processes, this run's redis-server and the
 * PostgreSQL backends serving this run's database (the driver's own CPU is not counted).
 * PostgreSQL's work is counted in transactions (pg_stat_database; each statement policy sends
 * is its own transaction), Redis's in commands and socket reads (INFO stats; one read is one
 * round trip of a client). The refusal's policy CPU is measured in process; the ledger sink's
 * rows/s on events appended beforehand, and its lag sampled during the Redis runs.
 *
 * `npm run bench -- scale [--seconds N] [--connections N] [--keys N] [--quick]`
 */
import { createLogger } from '../lib/log.ts';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { Redis } from 'ioredis';
import { createPolicy } from '../policy/authorize.ts';
import { parsePlans } from '../policy/plans.ts';
import { hashSecret, newSecret } from '../policy/secrets.ts';
import { benchDatabase, type BenchDatabase } from './database.ts';
import { openRedisStore } from '../policy/store/redis/store.ts';
import { LEDGER_GROUP, LEDGER_STREAM, startLedgerSink } from '../policy/ledger/index.ts';
import { CLAIM_PATH, EXT_AUTHZ_PREFIX, LEASE_HEADER, SETTLE_PATH } from '../lib/policy-contract.ts';
import { type PolicyProcess, startPolicyProcess } from '../test/policy/process.ts';
import { startRedis } from '../test/e2e/reliability/instances.ts';
import { TEST_RENDERER_AUTH } from '../test/lib/leases.ts';
import { cpuSecondsOf, percentile, printMachine, round2 } from './machine.ts';
import { PG_ADMIN_URL } from '../test/lib/pg-admin.ts';

const { values: opts } = parseArgs({
  args: process.argv.slice(3),
  options: {
    seconds: { type: 'string', default: '8' },
    connections: { type: 'string', default: '24' },
    keys: { type: 'string', default: '100000' },
    quick: { type: 'boolean', default: false },
  },
});
const QUICK = opts.quick === true;
const SECONDS = QUICK ? 1 : Number(opts.seconds);
const CONNECTIONS = QUICK ? 6 : Number(opts.connections);
const KEYS = QUICK ? 2_000 : Number(opts.keys);
const WARMUP_MS = QUICK ? 300 : 1_500;
const SINK_EVENTS = QUICK ? 5_000 : 100_000;
const WARM_KEYS = QUICK ? 20 : 200;
/** Policy replicas per run: K = 3 is the target's; 1 and 2 show what each replica more costs on this machine. */
const REPLICAS = [1, 2, 3];
const PLANS_DOC = {
  plans: {
    bench: { monthlyQuota: 1_000_000_000, perMinute: 1_000_000, concurrentRenders: 10_000 },
    tight: { monthlyQuota: 1_000_000_000, perMinute: 1, concurrentRenders: 1 },
  },
};
const PLANS = parsePlans(JSON.stringify(PLANS_DOC));
const round3 = (n: number): number => Math.round(n * 1000) / 1000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Kind = 'postgres' | 'redis';
/**
 * `uniform`: every key alike, over all of them (at this machine's rate nearly every check is a
 * key's first on its replica: the cold path, one key lookup and one month seed in PostgreSQL);
 * `hot`: the same with one key taking half; `warm`: uniform over WARM_KEYS keys each checked
 * once through every replica beforehand (the steady state of keys a replica already holds).
 */
type Workload = 'uniform' | 'hot' | 'warm';

interface Run {
  kind: Kind;
  replicas: number;
  workload: Workload;
  triples: number;
  triplesPerSec: number;
  errors: number;
  checkP50: number; checkP99: number; claimP50: number; claimP99: number; settleP50: number; settleP99: number;
  /** Check p99 of the keys other than the hot one (all keys in a uniform run). */
  otherCheckP99: number;
  cpuMsPerRender: number;
  cpuMsByRole: Record<string, number>;
  pgStatementsPerRender: number;
  redisCommandsPerRender: number;
  redisRoundTripsPerStep: number;
  sinkLagP99Ms?: number;
}

/** A database of its own holding `secrets` as keys on the bench plan, migrated. */
async function database(secrets: readonly string[]): Promise<BenchDatabase> {
  const db = await benchDatabase('tintype_scale', { migrate: true });
  const c = new pg.Client({ connectionString: db.url });
  await c.connect();
  for (let i = 0; i < secrets.length; i += 5_000) {
    const batch = secrets.slice(i, i + 5_000);
    const values: unknown[] = [];
    const rows = batch.map((s, j) => {
      values.push(`key_${i + j}`, hashSecret(s), i === 0 && j === 0 ? 'tight' : 'bench');
      return `($${3 * j + 1}, $${3 * j + 2}, '', $${3 * j + 3}, 0, NULL)`;
    });
    await c.query(`INSERT INTO api_keys (id, hash, name, plan, created_at, revoked_at) VALUES ${rows.join(', ')}`, values);
  }
  await c.end();
  return db;
}

/** A policy process; started again when its start fails (a loaded machine can make its start-up read of 100,000 keys outlast a statement's budget). */
async function startPolicy(env: Record<string, string>): Promise<PolicyProcess> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startPolicyProcess({ TINTYPE_LOG_LEVEL: 'info', ...env });
    } catch (err) {
      if (attempt >= 5) throw err;
      process.stdout.write(`policy start failed (${err instanceof Error ? err.message.split('\n')[0] : err}); again\n`);
    }
  }
}

function call(agent: http.Agent, port: number, p: string, headers: http.OutgoingHttpHeaders, body?: string): Promise<[number, string | undefined]> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: p, headers, agent }, (res) => {
      res.resume();
      res.on('end', () => resolve([res.statusCode ?? 0, res.headers[LEASE_HEADER] as string | undefined]));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** CPU seconds of the given pids now (a pid gone counts nothing more). */
function cpuOf(pids: readonly number[]): number {
  let s = 0;
  for (const pid of pids) {
    try {
      s += cpuSecondsOf(pid);
    } catch {
      // ended
    }
  }
  return s;
}

async function backendPids(admin: pg.Client, db: string): Promise<number[]> {
  return (await admin.query('SELECT pid FROM pg_stat_activity WHERE datname = $1', [db])).rows.map((r) => Number(r.pid));
}

async function transactions(admin: pg.Client, db: string): Promise<number> {
  const r = await admin.query('SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = $1', [db]);
  return Number(r.rows[0]?.n ?? 0);
}

async function redisStats(redis: Redis): Promise<{ commands: number; reads: number }> {
  const info = await redis.info('stats');
  const f = (n: string) => Number(new RegExp(`${n}:(\\d+)`).exec(info)?.[1] ?? 0);
  return { commands: f('total_commands_processed'), reads: f('total_reads_processed') };
}

/** How long the oldest event not yet written by the sink has waited, in ms (0 when none). */
async function sinkLagMs(redis: Redis): Promise<number> {
  const pending = (await redis.xpending(LEDGER_STREAM, LEDGER_GROUP).catch(() => [0])) as [number, string | null];
  let oldest: string | undefined = pending[0] > 0 && pending[1] !== null ? pending[1] : undefined;
  if (oldest === undefined) {
    const groups = (await redis.xinfo('GROUPS', LEDGER_STREAM).catch(() => [])) as unknown[][];
    const g = groups.find((x) => x[1] === LEDGER_GROUP);
    const delivered = g === undefined ? '0-0' : String(g[g.indexOf('last-delivered-id') + 1]);
    oldest = (await redis.xrange(LEDGER_STREAM, `(${delivered}`, '+', 'COUNT', 1))[0]?.[0];
  }
  return oldest === undefined ? 0 : Math.max(0, Date.now() - Number(oldest.split('-')[0]));
}

async function drive(kind: Kind, replicas: PolicyProcess[], workload: Workload, secrets: readonly string[], meter: {
  admin: pg.Client; db: string; redis?: Redis; redisPid?: number;
}): Promise<Run> {
  const edge = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  const renderers = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  const check: number[] = []; const claim: number[] = []; const settle: number[] = []; const other: number[] = [];
  let triples = 0;
  let errors = 0;
  const warmEnd = performance.now() + WARMUP_MS;
  const end = warmEnd + SECONDS * 1000;
  const pids = replicas.map((r) => r.pid);
  const lags: number[] = [];
  const sample = async () => {
    const backends = await backendPids(meter.admin, meter.db);
    return {
      policy: cpuOf(pids), redis: meter.redisPid === undefined ? 0 : cpuOf([meter.redisPid]), pg: new Map(backends.map((pid) => [pid, cpuOf([pid])])),
      tx: await transactions(meter.admin, meter.db), rs: meter.redis === undefined ? { commands: 0, reads: 0 } : await redisStats(meter.redis),
    };
  };
  // Read when the warm-up ends, whatever the loops are doing then.
  const before = sleep(WARMUP_MS).then(sample);
  const lagLoop = (async () => {
    while (meter.redis !== undefined && performance.now() < end) {
      if (performance.now() > warmEnd) lags.push(await sinkLagMs(meter.redis));
      await sleep(200);
    }
  })();
  const loop = async (w: number): Promise<void> => {
    const r = replicas[w % replicas.length]!;
    while (performance.now() < end) {
      // One key (key_1, not the tight one) takes half the traffic in the hot workload.
      const hot = workload === 'hot' && Math.random() < 0.5;
      const i = hot ? 1 : 2 + Math.floor(Math.random() * ((workload === 'warm' ? WARM_KEYS : secrets.length) - 2));
      const t0 = performance.now();
      const [status, lease] = await call(edge, r.port, `${EXT_AUTHZ_PREFIX}/v1/pdf`, { authorization: `Bearer ${secrets[i]}` });
      const t1 = performance.now();
      if (status !== 200 || lease === undefined) {
        errors++;
        continue;
      }
      const body = (o: object) => JSON.stringify({ lease, ...o });
      const cb = body({});
      const [cs] = await call(renderers, r.settlePort, CLAIM_PATH, { ...TEST_RENDERER_AUTH, 'content-type': 'application/json', 'content-length': String(cb.length) }, cb);
      const t2 = performance.now();
      const sb = body({ status: 200, cache: 'miss' });
      const [ss] = await call(renderers, r.settlePort, SETTLE_PATH, { ...TEST_RENDERER_AUTH, 'content-type': 'application/json', 'content-length': String(sb.length) }, sb);
      const t3 = performance.now();
      if (cs !== 204 || ss !== 204) errors++;
      if (t0 < warmEnd) continue;
      triples++;
      check.push(t1 - t0);
      if (!hot) other.push(t1 - t0);
      claim.push(t2 - t1);
      settle.push(t3 - t2);
    }
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, (_, w) => loop(w)));
  await lagLoop;
  edge.destroy();
  renderers.destroy();
  // pg_stat_database is flushed by each backend at most once a second.
  await sleep(1_500);
  const after = await sample();
  const b = await before;
  const n = Math.max(1, triples);
  // Per backend: one that ended meanwhile (a pool's idle connection closed) cannot be read at the end, and is left out rather than subtracted.
  let pgCpu = 0;
  for (const [pid, s] of after.pg) pgCpu += s - (b.pg.get(pid) ?? 0);
  const cpu = { policy: after.policy - b.policy, redis: after.redis - b.redis, postgres: pgCpu };
  return {
    kind, replicas: replicas.length, workload, triples, errors,
    triplesPerSec: Math.round(triples / SECONDS),
    checkP50: round2(percentile(check, 50)), checkP99: round2(percentile(check, 99)),
    claimP50: round2(percentile(claim, 50)), claimP99: round2(percentile(claim, 99)),
    settleP50: round2(percentile(settle, 50)), settleP99: round2(percentile(settle, 99)),
    otherCheckP99: round2(percentile(other, 99)),
    cpuMsPerRender: round3(((cpu.policy + cpu.redis + cpu.postgres) * 1000) / n),
    cpuMsByRole: { policy: round3((cpu.policy * 1000) / n), redis: round3((cpu.redis * 1000) / n), postgres: round3((cpu.postgres * 1000) / n) },
    pgStatementsPerRender: round3((after.tx - b.tx) / n),
    redisCommandsPerRender: round3((after.rs.commands - b.rs.commands) / n),
    redisRoundTripsPerStep: round3((after.rs.reads - b.rs.reads) / n / 3),
    ...(meter.redis === undefined ? {} : { sinkLagP99Ms: round2(percentile(lags, 99)) }),
  };
}

/** Checks and settles each of the WARM_KEYS keys once through every replica. */
async function warm(replicas: PolicyProcess[], secrets: readonly string[]): Promise<void> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  try {
    for (const r of replicas) {
      for (let i = 2; i < WARM_KEYS; i += CONNECTIONS) {
        await Promise.all(Array.from({ length: Math.min(CONNECTIONS, WARM_KEYS - i) }, async (_, j) => {
          const [, lease] = await call(agent, r.port, `${EXT_AUTHZ_PREFIX}/v1/pdf`, { authorization: `Bearer ${secrets[i + j]}` });
          const body = JSON.stringify({ lease, status: 200, cache: 'miss' });
          if (lease !== undefined) await call(agent, r.settlePort, SETTLE_PATH, { ...TEST_RENDERER_AUTH, 'content-type': 'application/json', 'content-length': String(body.length) }, body);
        }));
      }
    }
  } finally {
    agent.destroy();
  }
}

/** Policy CPU of one refusal answered from memory (a key over its window), in process. */
async function refusalCpuMs(countersUrl: string, databaseUrl: string, secret: string): Promise<number> {
  const store = openRedisStore({ countersUrl, databaseUrl, poolSize: 2, shortLived: true });
  const policy = createPolicy({ store, plans: PLANS, clock: Date.now, leaseTtlMs: 60_000 });
  try {
    const auth = `Bearer ${secret}`;
    await policy.check(auth, 'pdf');
    await policy.check(auth, 'pdf');
    const n = QUICK ? 2_000 : 50_000;
    const c0 = process.cpuUsage();
    let refused = 0;
    for (let i = 0; i < n; i++) if (!(await policy.check(auth, 'pdf')).allow) refused++;
    const c = process.cpuUsage(c0);
    // A window that turned meanwhile grants one: it is counted, one in n.
    return (c.user + c.system) / 1000 / Math.max(1, refused);
  } finally {
    await store.close();
  }
}

/** The ledger sink's rows/s on events appended beforehand, and the rows a replay of the whole stream adds. */
async function sinkFigures(redis: Redis, redisUrl: string, databaseUrl: string): Promise<{ rowsPerSec: number; duplicatesAfterReplay: number }> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  const logger = createLogger('bench', { level: 'error' });
  try {
    const count = async () => Number((await pool.query('SELECT count(*) AS n FROM usage')).rows[0].n);
    let sink = startLedgerSink({ redisUrl, databaseUrl, logger });
    await sink.drained();
    await sink.stop();
    const before = await count();
    const now = Date.now();
    for (let i = 0; i < SINK_EVENTS; i += 1_000) {
      const p = redis.pipeline();
      for (let j = i; j < Math.min(SINK_EVENTS, i + 1_000); j++) {
        p.xadd(LEDGER_STREAM, '*', 'e', JSON.stringify({ leaseId: `sink_${j}`, keyId: `key_${2 + (j % (KEYS - 2))}`, operation: 'pdf', month: new Date(now).toISOString().slice(0, 7), status: 200, error: null, cache: 'miss', metered: true, outcome: 'settled', checkedAt: now, recordedAt: now }));
      }
      await p.exec();
    }
    const t0 = performance.now();
    sink = startLedgerSink({ redisUrl, databaseUrl, logger });
    await sink.drained();
    const rows = await count();
    const rowsPerSec = Math.round((rows - before) / ((performance.now() - t0) / 1000));
    // The whole stream delivered again from its start, as after a sink's state was lost.
    await redis.xgroup('SETID', LEDGER_STREAM, LEDGER_GROUP, '0');
    await sink.drained();
    await sink.stop();
    return { rowsPerSec, duplicatesAfterReplay: (await count()) - rows };
  } finally {
    await pool.end();
  }
}

printMachine();
const secrets = Array.from({ length: KEYS }, () => newSecret());
const dir = mkdtempSync(path.join(os.tmpdir(), 'tintype-scale-'));
const plansFile = path.join(dir, 'plans.json');
writeFileSync(plansFile, JSON.stringify(PLANS_DOC));
// A redis-server of this run's own: its pid is read for CPU.
const counters = await startRedis();
const countersUrl = counters.url;
const redis = new Redis(countersUrl);
const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
await admin.connect();
const runs: Run[] = [];
let sink = { rowsPerSec: 0, duplicatesAfterReplay: 0 };
let refusal = 0;
const KINDS = ['postgres', 'redis'] as const;
const dbs: Partial<Record<Kind, BenchDatabase>> = {};
try {
  for (const kind of KINDS) {
    process.stdout.write(`${kind}: ${KEYS} keys…\n`);
    dbs[kind] = await database(secrets);
  }
  // Both stores' replicas run side by side and each workload is driven through one and then the
  // other, so the two figures of a ratio are measured within seconds of each other on this shared
  // machine, not minutes apart.
  for (const replicas of REPLICAS) {
    await redis.flushdb();
    const fleets: Partial<Record<Kind, PolicyProcess[]>> = {};
    try {
      for (const kind of KINDS) {
        const env: Record<string, string> = { DATABASE_URL: dbs[kind]!.url, TINTYPE_PLANS: plansFile, TINTYPE_PG_POOL: '10', ...(kind === 'redis' ? { TINTYPE_COUNTERS_URL: countersUrl } : {}) };
        fleets[kind] = [];
        for (let i = 0; i < replicas; i++) fleets[kind]!.push(await startPolicy(env));
      }
      for (const workload of ['uniform', 'hot', 'warm'] as const) {
        if (workload === 'warm') {
          for (const kind of KINDS) await warm(fleets[kind]!, secrets);
          // The warm-up's key reads are counted by pg_stat_database when a backend reports its
          // statistics: an idle one within 10 s (PGSTAT_IDLE_INTERVAL); not inside the window.
          await sleep(QUICK ? 0 : 11_000);
        }
        for (const kind of KINDS) {
          const r = await drive(kind, fleets[kind]!, workload, secrets, { admin, db: dbs[kind]!.name, ...(kind === 'redis' ? { redis, redisPid: counters.pid()! } : {}) });
          runs.push(r);
          process.stdout.write(`${kind} K=${replicas} ${workload}: ${r.triplesPerSec} triples/s, check p50/p99 ${r.checkP50}/${r.checkP99} ms (others' p99 ${r.otherCheckP99}), claim ${r.claimP50}/${r.claimP99}, settle ${r.settleP50}/${r.settleP99}; CPU ${r.cpuMsPerRender} ms/render ${JSON.stringify(r.cpuMsByRole)}; PostgreSQL ${r.pgStatementsPerRender} tx/render; Redis ${r.redisCommandsPerRender} commands/render, ${r.redisRoundTripsPerStep} reads/step${r.sinkLagP99Ms === undefined ? '' : `; sink lag p99 ${r.sinkLagP99Ms} ms`}; errors ${r.errors}\n`);
        }
      }
    } finally {
      for (const p of Object.values(fleets).flat()) await p.kill('SIGTERM');
    }
  }
  refusal = await refusalCpuMs(countersUrl, dbs.redis!.url, secrets[0]!);
  sink = await sinkFigures(redis, countersUrl, dbs.redis!.url);
  process.stdout.write(`refusal from memory: ${round3(refusal)} ms of policy CPU; sink ${sink.rowsPerSec} rows/s, ${sink.duplicatesAfterReplay} rows added by a replay\n`);
} finally {
  for (const db of Object.values(dbs)) await db.drop();
  redis.disconnect();
  await admin.end();
  await counters.destroy();
  rmSync(dir, { recursive: true, force: true });
}

const find = (kind: Kind, replicas: number, workload: Workload) => runs.find((r) => r.kind === kind && r.replicas === replicas && r.workload === workload)!;
const ours = find('redis', 3, 'uniform');
const oursHot = find('redis', 3, 'hot');
const oursWarm = find('redis', 3, 'warm');
const base = find('postgres', 3, 'uniform');
const baseWarm = find('postgres', 3, 'warm');
process.stdout.write(JSON.stringify({
  bench: 'scale',
  keys: KEYS,
  seconds: SECONDS,
  connections: CONNECTIONS,
  // Steady state (keys already held by the replicas); the cold figures beside them.
  pg_statements_per_render: oursWarm.pgStatementsPerRender,
  redis_round_trips_per_step: oursWarm.redisRoundTripsPerStep,
  redis_commands_per_render: oursWarm.redisCommandsPerRender,
  cpu_ms_per_render: oursWarm.cpuMsPerRender,
  baseline_cpu_ms_per_render: baseWarm.cpuMsPerRender,
  cpu_ratio: round3(oursWarm.cpuMsPerRender / baseWarm.cpuMsPerRender),
  cpu_ratio_by_replicas: Object.fromEntries(REPLICAS.map((k) => [k, round3(find('redis', k, 'warm').cpuMsPerRender / find('postgres', k, 'warm').cpuMsPerRender)])),
  cold_pg_statements_per_render: ours.pgStatementsPerRender,
  cold_redis_round_trips_per_step: ours.redisRoundTripsPerStep,
  cold_cpu_ms_per_render: ours.cpuMsPerRender,
  cold_baseline_cpu_ms_per_render: base.cpuMsPerRender,
  hot_other_check_p99_ratio: round3(oursHot.otherCheckP99 / ours.otherCheckP99),
  hot_triples_ratio: round3(oursHot.triplesPerSec / ours.triplesPerSec),
  baseline_hot_other_check_p99_ratio: round3(find('postgres', 3, 'hot').otherCheckP99 / base.otherCheckP99),
  baseline_hot_triples_ratio: round3(find('postgres', 3, 'hot').triplesPerSec / base.triplesPerSec),
  refusal_cpu_ms: round3(refusal),
  sink_rows_per_s: sink.rowsPerSec,
  sink_lag_p99_ms: Math.max(...runs.filter((r) => r.sinkLagP99Ms !== undefined).map((r) => r.sinkLagP99Ms!)),
  duplicates_after_replay: sink.duplicatesAfterReplay,
  // Calls answered anything but a grant, 204 claim and 204 settle (a run with many measured less than the meter's whole work).
  errors: runs.reduce((n, r) => n + r.errors, 0),
  runs,
}) + '\n');
