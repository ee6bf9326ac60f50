/**
 * The ledger sink on real PostgreSQL and Redis (docs/operations.md "Ledger stream"): idempotent by
 * lease through replays, nothing lost through a killed sink or a PostgreSQL outage, the stream
 * trimmed only below what every group acknowledged.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t, { type Test } from 'tap';
import { createLogger } from '../../../lib/log.ts';
import { LEDGER_FIELD, LEDGER_GROUP, startLedgerSink, type LedgerSinkOptions } from '../../../policy/ledger/index.ts';
import { trimAcknowledged } from '../../../policy/ledger/stream.ts';
import { REDIS_URL, ledgerHome, postgresRelay, records, type LedgerHome } from './home.ts';

const quiet = createLogger('ledger-test', { level: 'error' });
const CHILD = path.join(path.dirname(fileURLToPath(import.meta.url)), 'sink-child.ts');

function sink(t: Test, h: LedgerHome, extra: Partial<LedgerSinkOptions> = {}) {
  const s = startLedgerSink({ redisUrl: REDIS_URL, databaseUrl: h.databaseUrl, stream: h.stream, logger: quiet, blockMs: 200, retryMs: 200, ...extra });
  t.teardown(() => s.stop());
  return s;
}

/** Entries of the sink's group read and not yet acknowledged. */
async function pending(h: LedgerHome): Promise<number> {
  return h.redis.xpending(h.stream, LEDGER_GROUP).then((r) => Number((r as [number])[0]), () => 0);
}

async function until(what: () => Promise<boolean>): Promise<void> {
  while (!(await what())) await new Promise((resolve) => setTimeout(resolve, 50));
}

t.test('duplicates appended and the whole stream replayed write each lease once, and count it once', async (t) => {
  const h = await ledgerHome(t);
  const rs = records(3_000, '2026-03');
  // A retried settle appends its event again; one event is not a record at all.
  await h.append([...rs, ...rs.slice(0, 500)]);
  await h.redis.xadd(h.stream, '*', LEDGER_FIELD, '{"leaseId":"lease_bad"}');
  await h.append(rs.slice(2_500));
  let rejected = 0;
  const s = sink(t, h, { trimEveryMs: 3_600_000, onCommit: (c) => (rejected += c.rejected) });
  await s.drained();
  t.same(await h.counts(), { rows: 3_000, duplicates: 0 }, 'one row per lease');
  t.equal(rejected, 1, 'the event that is not a record is refused');
  const tally = async () => Number((await h.db.query('SELECT sum(n) AS n FROM usage_tally')).rows[0].n);
  t.equal(await tally(), 3_000, 'the tallies count each lease once');

  await h.redis.xgroup('SETID', h.stream, LEDGER_GROUP, '0');
  await s.drained();
  t.same(await h.counts(), { rows: 3_000, duplicates: 0 }, 'a replay of the whole stream writes nothing twice');
  t.equal(await tally(), 3_000, 'and counts nothing twice');
  t.equal(await pending(h), 0, 'everything acknowledged');
});

t.test('a low rate is written in few statements: a batch is gathered until it is large enough, or for a bounded while', async (t) => {
  const h = await ledgerHome(t);
  const batches: number[] = [];
  // Gathering for ten minutes: only twenty entries end it here.
  const s = sink(t, h, { gatherRows: 20, gatherMs: 600_000, onCommit: (c) => batches.push(c.read) });
  for (const r of records(20, '2026-07')) {
    await h.append([r]);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await s.drained();
  t.same(batches, [20], 'twenty events appended one at a time: one batch, one statement, with both consumers reading');

  const h2 = await ledgerHome(t);
  const few: number[] = [];
  const s2 = sink(t, h2, { gatherMs: 300, onCommit: (c) => few.push(c.read) });
  for (const r of records(3, '2026-07')) await h2.append([r]);
  await s2.drained();
  t.same(await h2.counts(), { rows: 3, duplicates: 0 }, 'a batch that never fills is written once its oldest entry has waited');
  t.equal(few.reduce((a, b) => a + b, 0), 3);
});

t.test('a sink killed (kill -9) with a batch in hand loses nothing: another takes its entries over', async (t) => {
  const h = await ledgerHome(t);
  await h.append(records(2_000, '2026-04'));
  // The ledger held locked: the doomed sink reads a batch and cannot commit it.
  await h.db.query('BEGIN');
  await h.db.query('LOCK TABLE usage IN ACCESS EXCLUSIVE MODE');
  const env: NodeJS.ProcessEnv = { ...process.env, LEDGER_SINK: JSON.stringify({ redisUrl: REDIS_URL, databaseUrl: h.databaseUrl, stream: h.stream, consumer: 'doomed', batchSize: 500 }) };
  delete env['NODE_OPTIONS'];
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  t.teardown(() => child.kill('SIGKILL'));
  await until(async () => (await pending(h)) > 0);
  t.ok((await pending(h)) > 0, 'the doomed sink holds entries');
  child.kill('SIGKILL');
  await exited;
  await h.db.query('ROLLBACK');

  sink(t, h, { claimIdleMs: 300 });
  await until(async () => (await h.counts()).rows === 2_000 && (await pending(h)) === 0);
  t.same(await h.counts(), { rows: 2_000, duplicates: 0 }, 'every record written once');
  t.equal(Number((await h.db.query('SELECT sum(n) AS n FROM usage_tally')).rows[0].n), 2_000, 'and counted once');
});

t.test('PostgreSQL away: the stream holds the events, the sink retries and catches up, twice', async (t) => {
  const h = await ledgerHome(t);
  const relay = postgresRelay();
  const pg = await relay;
  t.teardown(() => pg.close());
  const s = sink(t, { ...h, databaseUrl: pg.url(h.databaseUrl) });
  await h.append(records(1_000, '2026-05'));
  await until(async () => (await pending(h)) > 0);
  t.equal((await h.counts()).rows, 0, 'nothing written while PostgreSQL cannot be reached');
  await pg.open();
  await s.drained();
  t.same(await h.counts(), { rows: 1_000, duplicates: 0 }, 'caught up once it is back');

  await pg.close();
  await h.append(records(500, '2026-05', 5, 1_000));
  await until(async () => (await pending(h)) > 0);
  await pg.open();
  await s.drained();
  t.same(await h.counts(), { rows: 1_500, duplicates: 0 }, 'and again after its connections were cut');
});

t.test('the stream is trimmed only below what every group acknowledged', async (t) => {
  const h = await ledgerHome(t);
  await h.redis.xgroup('CREATE', h.stream, 'other', '0', 'MKSTREAM');
  await h.append(records(100, '2026-06'));
  const s = sink(t, h);
  await s.drained();
  await trimAcknowledged(h.redis, h.stream, 3_600_000);
  t.equal(await h.redis.xlen(h.stream), 100, 'a group that has read nothing keeps every entry');
  const read = (await h.redis.xreadgroup('GROUP', 'other', 'c', 'COUNT', 60, 'STREAMS', h.stream, '>')) as Array<[string, Array<[string, string[]]>]>;
  const ids = read[0]![1].map(([id]) => id);
  await h.redis.xack(h.stream, 'other', ...ids.slice(0, 40));
  await trimAcknowledged(h.redis, h.stream, 3_600_000);
  t.equal(await h.redis.xlen(h.stream), 60, "trimmed up to the other group's oldest pending entry");
  await h.redis.xack(h.stream, 'other', ...ids.slice(40));
  await trimAcknowledged(h.redis, h.stream, 3_600_000);
  t.equal(await h.redis.xlen(h.stream), 41, 'then up to the last entry it was given');
});
