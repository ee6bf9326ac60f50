/**
 * The ledger's month partitions (docs/operations.md "Ledger retention", "Reading usage"): an
 * unpartitioned ledger converted in place, usage read from tallies equal to the ledger, and a
 * month dropped as a partition while its tallies stay.
 */
import pg from 'pg';
import t from 'tap';
import { createLogger } from '../../../lib/log.ts';
import { BUILT_IN_PLANS } from '../../../policy/plans.ts';
import { ledgerUpkeep, startLedgerSink, writeLedgerBatch } from '../../../policy/ledger/index.ts';
import { ledgerMonths, upcomingMonths } from '../../../policy/ledger/partitions.ts';
import { PG_MIGRATIONS } from '../../../policy/store/postgres-schema.ts';
import { postgresUsageReader } from '../../../policy/usage-postgres.ts';
import { readUsage } from '../../../policy/usage-reader.ts';
import { runTintype } from '../process.ts';
import { storeHome } from '../stores.ts';
import { REDIS_URL, ledgerHome, records } from './home.ts';

const quiet = createLogger('ledger-test', { level: 'error' });
const KEYS = 5;

t.test('an unpartitioned ledger is converted in place: its rows in month partitions, counted as before', async (t) => {
  const home = await storeHome('postgres');
  t.teardown(() => home.drop());
  const db = new pg.Client({ connectionString: home.env['DATABASE_URL'] });
  await db.connect();
  t.teardown(() => db.end());
  await db.query('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)');
  for (const m of PG_MIGRATIONS.filter((m) => m.version < 8)) {
    await db.query(m.sql);
    await db.query('INSERT INTO schema_migrations VALUES ($1, 0)', [m.version]);
  }
  await db.query("INSERT INTO api_keys VALUES ('key_000000000000', 'h', '', 'free', 0, NULL)");
  for (const [i, month] of ['2026-01', '2026-01', '2026-02'].entries()) {
    await db.query(`INSERT INTO usage (lease_id, key_id, operation, month, status, error, cache, metered, outcome, checked_at, recorded_at)
      VALUES ($1, 'key_000000000000', 'pdf', $2, 200, NULL, 'miss', TRUE, 'settled', 1, 2)`, [`lease_${i}`, month]);
  }
  const tallyBefore = (await db.query('SELECT month, n FROM usage_tally ORDER BY month')).rows;
  const store = home.open();
  t.teardown(() => store.close());
  await store.migrate();
  t.equal((await db.query("SELECT relkind FROM pg_class WHERE relname = 'usage'")).rows[0].relkind, 'p', 'the ledger is partitioned');
  const where = (await db.query('SELECT tableoid::regclass::text AS part, lease_id FROM usage ORDER BY seq')).rows;
  t.same(where, [
    { part: 'usage_2026_01', lease_id: 'lease_0' }, { part: 'usage_2026_01', lease_id: 'lease_1' }, { part: 'usage_2026_02', lease_id: 'lease_2' },
  ], 'each row in its month, in its order');
  t.same((await db.query('SELECT month, n FROM usage_tally ORDER BY month')).rows, tallyBefore, 'the tallies as they were');
  const again = records(1, '2026-02')[0]!;
  t.equal(await writeLedgerBatch(db, [{ ...again, leaseId: 'lease_2', keyId: 'key_000000000000' }]), 0, 'a converted record is not written again');
  t.same((await store.usage('key_000000000000')).map((r) => r.leaseId), ['lease_0', 'lease_1', 'lease_2'], 'the store reads the converted ledger in order');
});

t.test('usage read from the tallies equals the ledger; a month dropped keeps its tallies, and the months ahead are made', async (t) => {
  const h = await ledgerHome(t);
  for (let i = 0; i < KEYS; i++) {
    await h.db.query("INSERT INTO api_keys VALUES ($1, $2, '', 'free', 0, NULL)", [`key_${String(i).padStart(12, '0')}`, `hash_${i}`]);
  }
  const months = ['2026-01', '2026-02', '2026-03'];
  for (const m of months) await h.append(records(700, m, KEYS));
  const s = startLedgerSink({ redisUrl: REDIS_URL, databaseUrl: h.databaseUrl, stream: h.stream, logger: quiet, blockMs: 200 });
  t.teardown(() => s.stop());
  await s.drained();

  const reader = postgresUsageReader(h.databaseUrl);
  const report = (month: string) => readUsage(reader, BUILT_IN_PLANS, month);
  const before = new Map<string, Awaited<ReturnType<typeof report>>>();
  for (const m of months) {
    const r = await report(m);
    before.set(m, r);
    const ledger = (await h.db.query(`SELECT count(*) AS records, count(*) FILTER (WHERE metered) AS metered,
      count(*) FILTER (WHERE outcome = 'unsettled') AS unsettled, count(*) FILTER (WHERE metered AND operation = 'pdf') AS pdf
      FROM usage WHERE month = $1`, [m])).rows[0];
    t.same({ records: r.totals.records, metered: r.totals.metered, unsettled: r.totals.unsettled, pdf: r.totals.operations.pdf },
      { records: Number(ledger.records), metered: Number(ledger.metered), unsettled: Number(ledger.unsettled), pdf: Number(ledger.pdf) },
      `${m}: the usage report equals the ledger`);
    t.equal(r.totals.records, 700);
  }

  const dropped = await ledgerUpkeep({ databaseUrl: h.databaseUrl, keepMonths: 2, clock: () => Date.parse('2026-03-20T00:00:00Z') });
  t.same(dropped, ['2026-01'], 'keeping 2 months in March drops January');
  const exists = async (name: string) => (await h.db.query('SELECT to_regclass($1) IS NOT NULL AS e', [name])).rows[0].e as boolean;
  t.equal(await exists('usage_2026_01'), false, "January's partition is gone");
  t.equal(Number((await h.db.query("SELECT count(*) AS n FROM usage WHERE month = '2026-01'")).rows[0].n), 0, 'and its records');
  for (const m of ['2026-02', '2026-03', '2026-04', '2026-05']) t.equal(await exists(`usage_${m.replace('-', '_')}`), true, `${m} is there`);
  t.same(await report('2026-01'), before.get('2026-01'), "January's usage still reads the same from its tallies");
  t.same(await report('2026-03'), before.get('2026-03'), "March's too");
  t.same(await ledgerUpkeep({ databaseUrl: h.databaseUrl, keepMonths: 2, clock: () => Date.parse('2026-03-20T00:00:00Z') }), [], 'a second round drops nothing');
});

t.test('tintype migrate (the chart\'s Job) and the start-up migration make this month\'s and the next months\' partitions ahead', async (t) => {
  const home = await storeHome('postgres');
  t.teardown(() => home.drop());
  const db = new pg.Client({ connectionString: home.env['DATABASE_URL'] });
  await db.connect();
  t.teardown(() => db.end());
  const ahead = upcomingMonths(Date.now());
  t.equal(ahead.length, 3, 'this month and the next two');

  const applied = await runTintype(['migrate'], home.env);
  t.equal(applied.code, 0, applied.stderr);
  t.same(await ledgerMonths(db), ahead, 'a first migration makes them');

  // A month turned since: the migration that finds nothing to apply still makes what is missing.
  await db.query(`DROP TABLE usage_${ahead[2]!.replace('-', '_')}`);
  await db.query(`DROP TABLE usage_${ahead[1]!.replace('-', '_')}`);
  const again = await runTintype(['migrate'], home.env);
  t.equal(again.stdout, 'schema: up to date, nothing applied\n', again.stderr);
  t.same(await ledgerMonths(db), ahead, 'so does one with nothing to apply');

  await db.query(`DROP TABLE usage_${ahead[1]!.replace('-', '_')}`);
  const store = home.open();
  t.teardown(() => store.close());
  await store.migrate();
  t.same(await ledgerMonths(db), ahead, "and policy's own at start (TINTYPE_MIGRATE=start)");
  const options = (await db.query(`SELECT c.reloptions FROM pg_class c WHERE c.relname = $1`, [`usage_${ahead[1]!.replace('-', '_')}`])).rows[0].reloptions;
  t.same(options, ['autovacuum_vacuum_insert_scale_factor=0.01'], 'vacuumed once 1% of its rows are new, for index-only reads');
});

t.test("a key's records are read from the index alone (migration 9): every column, in settle order, no heap page", async (t) => {
  const h = await ledgerHome(t);
  for (const m of ['2026-01', '2026-02']) await writeLedgerBatch(h.db, records(600, m, 30));
  // What autovacuum does once 1% of a partition's rows are new: its pages marked all-visible.
  await h.db.query('VACUUM (ANALYZE) usage');
  // Tables this small are cheapest read whole; the question here is whether the index covers the reads.
  await h.db.query('SET enable_seqscan = off');
  await h.db.query('SET enable_bitmapscan = off');
  const scans = async (sql: string): Promise<Array<{ type: string; index: string; heapFetches: number }>> => {
    const plan = (await h.db.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`)).rows[0]['QUERY PLAN'][0].Plan;
    const found: Array<{ type: string; index: string; heapFetches: number }> = [];
    const walk = (n: Record<string, unknown>) => {
      if (String(n['Node Type']).includes('Scan')) found.push({ type: String(n['Node Type']), index: String(n['Index Name']), heapFetches: Number(n['Heap Fetches']) });
      for (const c of (n['Plans'] as Array<Record<string, unknown>> | undefined) ?? []) walk(c);
    };
    walk(plan);
    return found;
  };
  const key = 'key_000000000007';
  const month = await scans(`SELECT * FROM usage WHERE key_id = '${key}' AND month = '2026-02' ORDER BY seq`);
  t.same(month.map((s) => [s.type, s.index.startsWith('usage_2026_02_key_id_seq'), s.heapFetches]), [['Index Only Scan', true, 0]],
    "a key's month: one partition, its (key, seq) index alone");
  const all = await scans(`SELECT * FROM usage WHERE key_id = '${key}' ORDER BY seq`);
  t.equal(all.length, (await ledgerMonths(h.db)).length, "the store's read of a key (every month): one scan a partition");
  t.ok(all.every((s) => s.type === 'Index Only Scan' && s.heapFetches === 0), 'each from its index alone');
});
