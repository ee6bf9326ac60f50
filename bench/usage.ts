/**
 * How long the usage report takes on a month of 1 and 10 million ledger records, on SQLite and
 * on PostgreSQL (docs/operations.md "Reading usage"). Measured as `tintype usage` reads: the report's own
 * reader (a read-only connection, one read transaction, the month's rows of usage_tally), then
 * the fold; the process start of the command is left out. Baseline in the same run, on the same
 * database: the query one would write by hand without the command, one GROUP BY of the ledger
 * over the month.
 *
 * The ledger is written in bulk, not through policy: SQLite from a recursive CTE in one
 * transaction, PostgreSQL from generate_series into an unlogged table with foreign keys and
 * triggers off, then vacuumed as autovacuum would. The trigger that counts each record into
 * usage_tally is left out while rows go in (SQLite: dropped and made again as it was), and the
 * new rows are counted in after, grouped, as migration 5 counts an existing ledger. 5% more
 * records go to the month before, so the month is a part of the ledger and not all of it.
 *
 * `npm run bench -- usage [--sizes 1000000,10000000] [--keys 1000] [--stores sqlite,postgres]`
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import Database from '../policy/store/sqlite-driver.ts';
import pg from 'pg';
import { BUILT_IN_PLANS } from '../policy/plans.ts';
import { benchDatabase } from './database.ts';
import { openSqliteStore } from '../policy/store/sqlite.ts';
import { postgresUsageReader } from '../policy/usage-postgres.ts';
import type { UsageReader } from '../policy/usage-reader.ts';
import { readUsage } from '../policy/usage-reader.ts';
import { sqliteUsageReader } from '../policy/usage-sqlite.ts';
import { printMachine, round2 } from './machine.ts';

const { values: opts } = parseArgs({
  args: process.argv.slice(3),
  options: {
    sizes: { type: 'string', default: '1000000,10000000' },
    keys: { type: 'string', default: '1000' },
    stores: { type: 'string', default: 'sqlite,postgres' },
    runs: { type: 'string', default: '2' },
  },
});
const SIZES = opts.sizes.split(',').map(Number).sort((a, b) => a - b);
const KEYS = Number(opts.keys);
const STORES = opts.stores.split(',') as Array<'sqlite' | 'postgres'>;
const RUNS = Number(opts.runs);
const MONTH = '2026-08';
const BEFORE = '2026-07';

/** `1m`, `10m`, `20k`: the size in a figure's name. */
const label = (n: number): string => (n >= 1e6 ? `${n / 1e6}m` : `${n / 1e3}k`);

/** How each store spells the two expressions the seed needs. */
interface Dialect {
  /** `prefix` then `v` zero-padded to `width` digits. */
  pad(prefix: string, width: number, v: string): string;
  /** A NOT NULL boolean column from a condition that may be NULL. */
  flag(condition: string): string;
}

/**
 * The select list of one seeded record `i` (an integer expression), the same on both stores: key
 * i mod KEYS, then operation, status, error and cache varied independently, in about the
 * proportions of a busy service (90% 200, of which half cache hits; some 422, 499, 502, 504,
 * unsettled).
 */
function recordSql(d: Dialect, i: string, month: string, leasePrefix: string): string {
  const op = `((${i} / ${KEYS}) % 5)`;
  const p = `((${i} / ${KEYS * 5}) % 100)`;
  const status = `(CASE WHEN ${p} < 90 THEN 200 WHEN ${p} < 93 THEN 422 WHEN ${p} < 95 THEN 502 WHEN ${p} < 97 THEN 504 WHEN ${p} < 98 THEN 499 END)`;
  return `${d.pad(leasePrefix, 11, i)}, ${d.pad('key_', 12, `${i} % ${KEYS}`)},
    CASE ${op} WHEN 0 THEN 'ping' WHEN 1 THEN 'screenshot' WHEN 2 THEN 'html-to-image' WHEN 3 THEN 'pdf' ELSE 'og' END,
    '${month}', ${status},
    CASE ${status} WHEN 422 THEN 'url_rejected' WHEN 502 THEN 'render_failed' WHEN 504 THEN 'render_timeout' END,
    CASE WHEN ${status} = 200 AND ${op} <> 0 THEN (CASE WHEN ${p} % 2 = 1 THEN 'hit' ELSE 'miss' END) END,
    ${d.flag(`${status} IN (200, 502, 504)`)}, CASE WHEN ${status} IS NULL THEN 'unsettled' ELSE 'settled' END, 0, 0`;
}

const USAGE_COLUMNS = 'lease_id, key_id, operation, month, status, error, cache, metered, outcome, checked_at, recorded_at';
/** usage_tally's kind of record, and its unique index (migration 5) as an ON CONFLICT target. */
const TALLY_COLUMNS = 'month, key_id, operation, status, error, cache, metered, outcome';
const TALLY_KIND = "(month, key_id, operation, coalesce(status, 0), coalesce(error, ''), coalesce(cache, ''), metered, outcome)";

interface Home {
  reader: UsageReader;
  /** Adds records numbered [from, to) to the month, and 5% as many to the month before. */
  seed(from: number, to: number): Promise<void>;
  /** The hand-written query: one GROUP BY over the month. Answers its row count. */
  baseline(): Promise<number>;
  drop(): Promise<void>;
}

async function sqliteHome(dir: string): Promise<Home> {
  const data = path.join(dir, 'sqlite');
  const store = openSqliteStore({ dataDir: data, backgroundCheckpoints: false });
  await store.migrate();
  await store.close();
  const db = new Database(path.join(data, 'policy.sqlite'));
  db.pragma('synchronous = OFF');
  db.pragma('cache_size = -262144');
  db.exec(`WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i < ${KEYS - 1})
    INSERT INTO api_keys SELECT printf('key_%012d', i), 'h' || i, '', 'pro', 0, NULL FROM k`);
  const dialect: Dialect = { pad: (prefix, w, v) => `printf('${prefix}%0${w}d', ${v})`, flag: (c) => `coalesce(${c}, 0)` };
  const insert = (from: number, to: number, month: string, prefix: string): void => {
    if (to <= from) return;
    db.exec(`WITH RECURSIVE c(i) AS (SELECT ${from} UNION ALL SELECT i + 1 FROM c WHERE i < ${to - 1})
      INSERT INTO usage (${USAGE_COLUMNS}) SELECT ${recordSql(dialect, 'i', month, prefix)} FROM c`);
  };
  return {
    reader: sqliteUsageReader(data),
    async seed(from, to) {
      const trigger = db.prepare("SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = 'usage_tally_insert'").pluck().get() as string;
      db.transaction(() => {
        const last = db.prepare('SELECT coalesce(max(seq), 0) FROM usage').pluck().get() as number;
        db.exec('DROP TRIGGER usage_tally_insert');
        insert(from, to, MONTH, 'b');
        insert(Math.floor(from / 20), Math.floor(to / 20), BEFORE, 'a');
        db.prepare(`INSERT INTO usage_tally (${TALLY_COLUMNS}, n) SELECT ${TALLY_COLUMNS}, count(*) FROM usage WHERE seq > ?
          GROUP BY ${TALLY_COLUMNS} ON CONFLICT ${TALLY_KIND} DO UPDATE SET n = n + excluded.n`).run(last);
        db.exec(trigger);
      })();
      db.pragma('wal_checkpoint(TRUNCATE)');
    },
    async baseline() {
      const ro = new Database(path.join(data, 'policy.sqlite'), { readonly: true });
      try {
        return ro.prepare('SELECT key_id, operation, status, error, cache, metered, outcome, count(*) AS n FROM usage WHERE month = ? ' +
          'GROUP BY key_id, operation, status, error, cache, metered, outcome').all(MONTH).length;
      } finally {
        ro.close();
      }
    },
    async drop() {
      db.close();
    },
  };
}

async function postgresHome(): Promise<Home> {
  const db = await benchDatabase('tintype_bench_usage', { migrate: true });
  const c = new pg.Client({ connectionString: db.url });
  await c.connect();
  // Bulk load only: foreign keys off for this session, no WAL for the ledger table.
  await c.query('SET session_replication_role = replica');
  await c.query(`SET maintenance_work_mem = '256MB'`);
  // The ledger is partitioned by month (migration 8): the two months' partitions, without WAL.
  for (const m of [BEFORE, MONTH]) {
    const part = (await c.query('SELECT tintype_ledger_partition($1) AS p', [m])).rows[0].p as string;
    await c.query(`ALTER TABLE ${part} SET UNLOGGED`);
  }
  await c.query(`INSERT INTO api_keys SELECT format('key_%s', lpad(i::text, 12, '0')), 'h' || i, '', 'pro', 0, NULL FROM generate_series(0, ${KEYS - 1}) i`);
  const dialect: Dialect = { pad: (prefix, w, v) => `'${prefix}' || lpad((${v})::text, ${w}, '0')`, flag: (c) => `coalesce(${c}, false)` };
  const insert = async (from: number, to: number, month: string, prefix: string): Promise<void> => {
    if (to <= from) return;
    await c.query(`INSERT INTO usage (${USAGE_COLUMNS})
      SELECT ${recordSql(dialect, 'i', month, prefix)} FROM generate_series(${from}::bigint, ${to - 1}) i`);
  };
  return {
    reader: postgresUsageReader(db.url),
    async seed(from, to) {
      const last = Number((await c.query('SELECT coalesce(max(seq), 0) AS s FROM usage')).rows[0].s);
      await insert(from, to, MONTH, 'b');
      await insert(Math.floor(from / 20), Math.floor(to / 20), BEFORE, 'a');
      await c.query(`INSERT INTO usage_tally (${TALLY_COLUMNS}, n) SELECT ${TALLY_COLUMNS}, count(*) FROM usage WHERE seq > $1
        GROUP BY ${TALLY_COLUMNS} ON CONFLICT ${TALLY_KIND} DO UPDATE SET n = usage_tally.n + excluded.n`, [last]);
      await c.query('VACUUM ANALYZE usage');
      await c.query('VACUUM ANALYZE usage_tally');
    },
    async baseline() {
      const r = await c.query('SELECT key_id, operation, status, error, cache, metered, outcome, count(*) AS n FROM usage WHERE month = $1 ' +
        'GROUP BY key_id, operation, status, error, cache, metered, outcome', [MONTH]);
      return r.rowCount ?? 0;
    },
    async drop() {
      await c.end();
      await db.drop();
    },
  };
}

interface Timing {
  ms: number;
  /** CPU of this process (all threads) during the best run: SQLite's reading is here, PostgreSQL's in the server. */
  cpuMs: number;
}

/** Best of RUNS: the machine is shared, and the least disturbed run is the closest to the cost. */
async function best(fn: () => Promise<unknown>): Promise<Timing> {
  let out: Timing = { ms: Infinity, cpuMs: 0 };
  for (let i = 0; i < RUNS; i++) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    await fn();
    const ms = performance.now() - t0;
    const c = process.cpuUsage(c0);
    if (ms < out.ms) out = { ms: round2(ms), cpuMs: round2((c.user + c.system) / 1000) };
  }
  return out;
}

printMachine();
const load = os.loadavg()[0]!;
console.log(`load average at start: ${load.toFixed(2)}; ${KEYS} keys; best of ${RUNS} runs per figure; month ${MONTH} plus 5% in ${BEFORE}`);
const figures: Record<string, number | string> = {};
const dir = mkdtempSync(path.join(os.tmpdir(), 'tintype-bench-usage-'));
try {
  for (const kind of STORES) {
    const home = kind === 'sqlite' ? await sqliteHome(dir) : await postgresHome();
    try {
      let seeded = 0;
      for (const size of SIZES) {
        const t0 = performance.now();
        await home.seed(seeded, size);
        seeded = size;
        const seedS = round2((performance.now() - t0) / 1000);
        let metered = 0;
        const report = await best(async () => {
          const r = await readUsage(home.reader, BUILT_IN_PLANS, MONTH);
          metered = r.totals.metered;
          if (r.totals.records !== size) throw new Error(`the report counted ${r.totals.records} records, not ${size}`);
        });
        const base = await best(() => home.baseline());
        console.log(`${kind.padEnd(8)} ${label(size).padStart(4)} records: report ${report.ms} ms (this process's CPU ${report.cpuMs} ms), ` +
          `hand-written GROUP BY ${base.ms} ms; seeded in ${seedS} s; ${metered} metered`);
        figures[`${kind}_${label(size)}_ms`] = report.ms;
        figures[`${kind}_${label(size)}_cpu_ms`] = report.cpuMs;
        figures[`baseline_${kind}_${label(size)}_ms`] = base.ms;
        figures[`${kind}_${label(size)}_seed_s`] = seedS;
      }
    } finally {
      await home.drop();
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
console.log(JSON.stringify({
  bench: 'usage',
  keys: KEYS,
  sizes: SIZES,
  ...figures,
  baseline: 'one hand-written GROUP BY over the month, same database, same run',
  load_average: round2(load),
}));
