/**
 * The ledger sink and the month partitions (docs/operations.md "Ledger stream", "Ledger
 * retention") on this machine's PostgreSQL and Redis, each in a database and a stream of the
 * bench's own.
 *
 * - Sink rows/s: `--events` events appended to the stream first, then the sink(s) started and
 *   timed until every one is written. Baseline in the same run, on the same database: the same
 *   insert function given one record per transaction, as the PostgreSQL-only store's settle writes.
 * - Lag: events appended at `--rate` per second for `--seconds` while the sink runs; per event,
 *   from its XADD to the commit of its batch. Rows per statement (per batch written) at that rate;
 *   `--consumers`, `--batch` and `--gather-ms` set the sink's options of those names (its defaults unless given).
 * - Replay: the group set back to the stream's start and drained again; duplicate rows counted.
 * - `--year`: a ledger of `--year-rows` (10^8) records in 12 month partitions, loaded in bulk
 *   (generate_series into unlogged partitions), then vacuumed as autovacuum keeps them (each
 *   partition once 1% of its rows are new: migration 9). One key's month of records read in
 *   settle order (`--reads` random key-months, p99) at a tenth of the rows and at all of them,
 *   keys growing with the rows so a key's month holds about as many records at both sizes; with
 *   it, the pages a read touches and its heap fetches (EXPLAIN (ANALYZE, BUFFERS)), and, as the
 *   baseline of the same run, the same reads with index-only scans off (each record read from
 *   the heap, as before migration 9). Then a month dropped.
 *
 * `npm run bench -- ledger [--quick] [--events N] [--rate N] [--seconds N] [--sinks N] [--consumers N] [--batch N] [--gather-ms N] [--year] [--year-rows N]`
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import pg from 'pg';
import { createLogger } from '../lib/log.ts';
import { LEDGER_FIELD, LEDGER_GROUP, ledgerEvent, startLedgerSink, writeLedgerBatch } from '../policy/ledger/index.ts';
import { benchDatabase } from './database.ts';
import type { UsageRecord } from '../policy/store/store.ts';
import { cpuSecondsOf, percentile, printMachine, round2 } from './machine.ts';

const { values: opts } = parseArgs({
  args: process.argv.slice(3),
  options: {
    quick: { type: 'boolean', default: false },
    events: { type: 'string' },
    keys: { type: 'string', default: '10000' },
    rate: { type: 'string' },
    seconds: { type: 'string' },
    sinks: { type: 'string', default: '1' },
    'gather-ms': { type: 'string' },
    consumers: { type: 'string' },
    batch: { type: 'string' },
    'baseline-events': { type: 'string' },
    year: { type: 'boolean', default: false },
    'year-rows': { type: 'string' },
    reads: { type: 'string', default: '300' },
  },
});
const quick = opts.quick;
const EVENTS = Number(opts.events ?? (quick ? 5_000 : 300_000));
const KEYS = Number(opts.keys);
const RATE = Number(opts.rate ?? (quick ? 2_000 : 10_000));
const SECONDS = Number(opts.seconds ?? (quick ? 2 : 10));
const SINKS = Number(opts.sinks);
/** Sink options given on the command line; the sink's defaults otherwise. */
const SINK_OPTIONS = Object.fromEntries(([['gather-ms', 'gatherMs'], ['consumers', 'consumers'], ['batch', 'batchSize']] as const)
  .filter(([flag]) => opts[flag] !== undefined).map(([flag, option]) => [option, Number(opts[flag])]));
const BASELINE_EVENTS = Number(opts['baseline-events'] ?? (quick ? 300 : 5_000));
const YEAR_ROWS = Number(opts['year-rows'] ?? (quick ? 120_000 : 100_000_000));
const READS = Number(opts.reads);
/** Records of one key in one month in the year's ledger, whatever its size. */
const PER_KEY_MONTH = 80;
const REDIS_URL = 'redis://127.0.0.1:6379';
const MONTH = '2026-11';
const quiet = createLogger('bench-ledger', { level: 'error' });

function record(i: number, tag: string): UsageRecord {
  const now = Date.now();
  return {
    leaseId: `lease_${tag}_${i}`, keyId: `key_${String(i % KEYS).padStart(12, '0')}`, operation: ['screenshot', 'pdf', 'og'][i % 3]!,
    month: MONTH, status: i % 10 === 9 ? 504 : 200, error: i % 10 === 9 ? 'render_timeout' : null, cache: i % 10 === 9 ? null : i % 2 === 0 ? 'hit' : 'miss',
    metered: true, outcome: 'settled', checkedAt: now - 50, recordedAt: now,
  };
}

async function append(redis: Redis, stream: string, rs: readonly UsageRecord[]): Promise<void> {
  for (let i = 0; i < rs.length; i += 2_000) {
    const p = redis.pipeline();
    for (const r of rs.slice(i, i + 2_000)) p.xadd(stream, '*', LEDGER_FIELD, ledgerEvent(r));
    await p.exec();
  }
}

/** Redis's own CPU seconds so far (INFO cpu). */
async function redisCpuSeconds(redis: Redis): Promise<number> {
  const info = await redis.info('cpu');
  const get = (k: string) => Number(new RegExp(`^${k}:([0-9.]+)`, 'm').exec(info)?.[1] ?? 0);
  return get('used_cpu_user') + get('used_cpu_sys');
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function sinkFigures(): Promise<Record<string, number>> {
  const db = await benchDatabase('tintype_bench_ledger', { migrate: true });
  const redis = new Redis(REDIS_URL);
  const stream = `bench:tintype:ledger:${randomBytes(6).toString('hex')}`;
  const pool = new pg.Pool({ connectionString: db.url, max: 1 });
  // Dropping the database at the end ends whatever connection is still open: not an error of the bench.
  pool.on('error', () => {});
  try {
    // Baseline: one record per transaction.
    let t0 = performance.now();
    for (let i = 0; i < BASELINE_EVENTS; i++) await writeLedgerBatch(pool, [record(i, 'base')]);
    const baselineRowsPerS = BASELINE_EVENTS / ((performance.now() - t0) / 1000);

    await append(redis, stream, Array.from({ length: EVENTS }, (_, i) => record(i, 'bulk')));
    let written = 0;
    let lags: number[] | undefined;
    let statements = 0;
    const onCommit = (c: { read: number; rejected: number; inserted: number; lagsMs: number[] }) => {
      written += c.inserted;
      if (lags !== undefined) lags.push(...c.lagsMs);
      if (c.read > c.rejected) statements++;
    };
    const redisCpu0 = await redisCpuSeconds(redis);
    const cpu0 = process.cpuUsage();
    t0 = performance.now();
    const sinks = Array.from({ length: SINKS }, () => startLedgerSink({ redisUrl: REDIS_URL, databaseUrl: db.url, stream, logger: quiet, onCommit, blockMs: 100, ...SINK_OPTIONS }));
    while (written < EVENTS) await sleep(5);
    const sinkRowsPerS = EVENTS / ((performance.now() - t0) / 1000);
    // CPU of the whole write: this process (the sinks), their PostgreSQL backends (opened by the
    // sinks, so all their time is this phase's) and Redis (whole server: other users' share is noise).
    const nodeCpu = process.cpuUsage(cpu0);
    const backends = (await pool.query('SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()')).rows;
    const pgCpuS = backends.reduce((sum, r) => sum + cpuSecondsOf(Number(r.pid)), 0);
    const cpuS = (nodeCpu.user + nodeCpu.system) / 1e6 + pgCpuS + ((await redisCpuSeconds(redis)) - redisCpu0);
    const cpuUsPerRow = (cpuS * 1e6) / EVENTS;

    // Lag at a steady rate, appended every 10 ms.
    lags = [];
    statements = 0;
    let next = 0;
    const steady = Math.round(RATE * SECONDS);
    const start = performance.now();
    while (next < steady) {
      const due = Math.min(steady, Math.floor(((performance.now() - start) / 1000) * RATE));
      if (due > next) {
        await append(redis, stream, Array.from({ length: due - next }, (_, j) => record(next + j, 'steady')));
        next = due;
      }
      await sleep(10);
    }
    while (written < EVENTS + steady) await sleep(5);
    const lagP50 = percentile(lags, 50);
    const lagP99 = percentile(lags, 99);
    const steadyStatements = statements;
    lags = undefined;

    // Replay the whole stream.
    await redis.xgroup('SETID', stream, LEDGER_GROUP, '0');
    await sinks[0]!.drained();
    for (const s of sinks) await s.stop();
    const c = (await pool.query('SELECT count(*) AS n, count(*) - count(DISTINCT lease_id) AS d FROM usage')).rows[0];
    const expected = BASELINE_EVENTS + EVENTS + steady;
    if (Number(c.n) !== expected) throw new Error(`the ledger holds ${c.n} rows, not ${expected}`);
    console.log(`sink: ${round2(sinkRowsPerS)} rows/s with ${SINKS} sink(s) (${EVENTS} events); one record per transaction: ${round2(baselineRowsPerS)} rows/s`);
    console.log(`sink CPU: ${round2(cpuUsPerRow)} µs a row (node ${round2((nodeCpu.user + nodeCpu.system) / EVENTS)}, PostgreSQL ${round2((pgCpuS * 1e6) / EVENTS)}, Redis the rest): ${round2(1e6 / cpuUsPerRow)} rows per CPU second`);
    console.log(`lag at ${RATE} events/s for ${SECONDS} s: p50 ${round2(lagP50)} ms, p99 ${round2(lagP99)} ms; ${round2(steady / steadyStatements)} rows a statement ` +
      `(${steadyStatements} statements); duplicates after replaying the stream: ${Number(c.d)}`);
    return {
      sink_rows_per_s: round2(sinkRowsPerS), sink_cpu_us_per_row: round2(cpuUsPerRow), sink_rows_per_cpu_s: round2(1e6 / cpuUsPerRow), baseline_rows_per_s: round2(baselineRowsPerS),
      sink_speedup: round2(sinkRowsPerS / baselineRowsPerS), sink_lag_p50_ms: round2(lagP50), sink_lag_p99_ms: round2(lagP99),
      steady_rows_per_statement: round2(steady / steadyStatements), steady_statements_per_s: round2(steadyStatements / SECONDS),
      duplicates_after_replay: Number(c.d),
    };
  } finally {
    await pool.end();
    await redis.del(stream);
    redis.disconnect();
    await db.drop();
  }
}

const YEAR_MONTHS = Array.from({ length: 12 }, (_, i) => `2025-${String(i + 1).padStart(2, '0')}`);

/**
 * Records [from, to) of the year: record i in month i mod 12, of key (keyFrom + (i div 12) mod
 * keys), so each key of the range gets about the same records in every month.
 */
async function loadYear(c: pg.Client, from: number, to: number, keyFrom: number, keys: number): Promise<void> {
  const step = 2_000_000;
  for (let a = from; a < to; a += step) {
    const b = Math.min(to, a + step);
    await c.query(`INSERT INTO usage (lease_id, key_id, operation, month, status, error, cache, metered, outcome, checked_at, recorded_at)
      SELECT 'l' || i, 'key_' || lpad((${keyFrom} + (i / 12) % ${keys})::text, 12, '0'), (ARRAY['screenshot', 'pdf', 'og'])[1 + i % 3],
        '2025-' || lpad((1 + i % 12)::text, 2, '0'), 200, NULL, 'miss', TRUE, 'settled', 0, 0
      FROM generate_series(${a}::bigint, ${b - 1}) i`);
  }
  // What autovacuum does to the partitions as they fill (migration 9): all-visible pages for index-only scans.
  await c.query('VACUUM (ANALYZE) usage');
}

const MONTH_READ = 'SELECT lease_id, operation, status, error, cache, metered, outcome, checked_at, recorded_at FROM usage WHERE key_id = $1 AND month = $2 ORDER BY seq';
const EXPLAINED = 20;

interface Reads { p99: number; p50: number; rows: number; pages: number; heapFetches: number }

/** Shared pages (hit or read) of a plan's top node and heap fetches of all its nodes. */
function planCost(node: Record<string, unknown>): { pages: number; heapFetches: number } {
  const inner = ((node['Plans'] as Array<Record<string, unknown>> | undefined) ?? []).map(planCost);
  return {
    pages: Number(node['Shared Hit Blocks'] ?? 0) + Number(node['Shared Read Blocks'] ?? 0),
    heapFetches: Number(node['Heap Fetches'] ?? 0) + inner.reduce((a, b) => a + b.heapFetches, 0),
  };
}

/** `READS` random key-months read, timed; `EXPLAINED` more explained. `heap`: index-only scans off. */
async function monthReads(c: pg.Client, keys: number, heap: boolean): Promise<Reads> {
  const pick = () => [`key_${String(Math.floor(Math.random() * keys)).padStart(12, '0')}`, YEAR_MONTHS[Math.floor(Math.random() * 12)]!];
  await c.query(`SET enable_indexonlyscan = ${heap ? 'off' : 'on'}`);
  const times: number[] = [];
  let rows = 0;
  for (let i = 0; i < READS; i++) {
    const t0 = performance.now();
    const r = await c.query({ name: 'month', text: MONTH_READ, values: pick() });
    times.push(performance.now() - t0);
    rows += r.rowCount ?? 0;
  }
  let pages = 0;
  let heapFetches = 0;
  for (let i = 0; i < EXPLAINED; i++) {
    const [key, month] = pick();
    const plan = (await c.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${MONTH_READ.replace('$1', `'${key}'`).replace('$2', `'${month}'`)}`)).rows[0]['QUERY PLAN'][0].Plan;
    const cost = planCost(plan);
    pages += cost.pages;
    heapFetches += cost.heapFetches;
  }
  await c.query('RESET enable_indexonlyscan');
  return { p99: percentile(times, 99), p50: percentile(times, 50), rows: rows / READS, pages: pages / EXPLAINED, heapFetches: heapFetches / EXPLAINED };
}

/** Index-only reads (after one warm-up round) and the heap-reading baseline, alternated. */
async function readsAt(c: pg.Client, keys: number): Promise<{ ours: Reads; heap: Reads }> {
  await monthReads(c, keys, false);
  const ours = await monthReads(c, keys, false);
  const heap = await monthReads(c, keys, true);
  return { ours, heap };
}

const describe = (r: Reads) => `p50 ${round2(r.p50)} ms, p99 ${round2(r.p99)} ms, ${round2(r.pages)} pages and ${round2(r.heapFetches)} heap fetches a read`;

async function yearFigures(): Promise<Record<string, number>> {
  const db = await benchDatabase('tintype_bench_ledger_year', { migrate: true });
  const c = new pg.Client({ connectionString: db.url });
  await c.connect();
  try {
    // Bulk load only: no WAL for the month partitions.
    for (const m of YEAR_MONTHS) {
      const part = (await c.query('SELECT tintype_ledger_partition($1) AS p', [m])).rows[0].p as string;
      await c.query(`ALTER TABLE ${part} SET UNLOGGED`);
    }
    await c.query(`SET maintenance_work_mem = '256MB'`);
    const tenth = Math.floor(YEAR_ROWS / 10);
    const keysAtTenth = Math.max(1, Math.round(tenth / (12 * PER_KEY_MONTH)));
    const keysAtAll = Math.max(keysAtTenth + 1, Math.round(YEAR_ROWS / (12 * PER_KEY_MONTH)));
    let t0 = performance.now();
    await loadYear(c, 0, tenth, 0, keysAtTenth);
    console.log(`year: ${tenth} records loaded in ${round2((performance.now() - t0) / 1000)} s`);
    const small = await readsAt(c, keysAtTenth);
    t0 = performance.now();
    await loadYear(c, tenth, YEAR_ROWS, keysAtTenth, keysAtAll - keysAtTenth);
    console.log(`year: ${YEAR_ROWS} records loaded (${round2((performance.now() - t0) / 1000)} s more)`);
    const large = await readsAt(c, keysAtAll);
    const size = (await c.query(`SELECT pg_size_pretty(sum(pg_total_relation_size(i.inhrelid))) AS s FROM pg_inherits i WHERE i.inhparent = 'usage'::regclass`)).rows[0].s as string;
    t0 = performance.now();
    const dropped = (await c.query("SELECT tintype_ledger_drop_before('2025-02') AS d")).rows[0].d as string[];
    const dropMs = performance.now() - t0;
    if (dropped.join() !== '2025-01') throw new Error(`dropped ${dropped.join()}`);
    console.log(`year: one key's month (${round2(small.ours.rows)} and ${round2(large.ours.rows)} records) at ${tenth} records: ${describe(small.ours)}; ` +
      `at ${YEAR_ROWS} (${size} with indexes): ${describe(large.ours)} (${round2(large.ours.p99 / small.ours.p99)}x); a month dropped in ${round2(dropMs)} ms`);
    console.log(`year, index-only scans off (every record from the heap): at ${tenth}: ${describe(small.heap)}; at ${YEAR_ROWS}: ${describe(large.heap)} (${round2(large.heap.p99 / small.heap.p99)}x)`);
    return {
      year_rows: YEAR_ROWS, year_month_read_p99_ms: round2(large.ours.p99), year_month_read_p99_ms_at_tenth: round2(small.ours.p99),
      year_growth_ratio: round2(large.ours.p99 / small.ours.p99), year_pages_per_read: round2(large.ours.pages), year_heap_fetches_per_read: round2(large.ours.heapFetches),
      year_heap_read_p99_ms: round2(large.heap.p99), year_heap_read_p99_ms_at_tenth: round2(small.heap.p99), year_heap_growth_ratio: round2(large.heap.p99 / small.heap.p99),
      year_heap_pages_per_read: round2(large.heap.pages), year_month_drop_ms: round2(dropMs),
    };
  } finally {
    await c.end();
    await db.drop();
  }
}

printMachine();
const load = os.loadavg()[0]!;
console.log(`load average at start: ${load.toFixed(2)}`);
const figures = { ...(await sinkFigures()), ...(opts.year ? await yearFigures() : {}) };
console.log(JSON.stringify({
  bench: 'ledger', events: EVENTS, sinks: SINKS, rate: RATE, sink_options: SINK_OPTIONS, ...figures,
  baseline: 'the same insert function, one record per transaction, same database, same run',
  load_average: round2(load), load_average_end: round2(os.loadavg()[0]!),
}));
