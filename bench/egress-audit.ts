/**
 * What the egress audit trail costs where it lives (docs/operations.md "Egress policy and audit"):
 * records written as policy writes them (transactions of 5,000, policy/egress-audit.ts) into
 * SQLite (`tintype start`) and PostgreSQL (a cluster), in the same run: rows per second, bytes
 * per row on disk with the two indexes, and reading one key's window back. The rows look like a
 * busy service's: 50 keys, 40 decisions per render, 30 hosts, one in ten refused.
 *
 * `npm run bench -- egress-audit [--rows N]`
 */
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import type { EgressAuditRecord } from '../policy/store/egress-store.ts';
import { openPostgresStore } from '../policy/store/postgres.ts';
import { openSqliteStore } from '../policy/store/sqlite.ts';
import type { PolicyStore } from '../policy/store/store.ts';
import { printMachine, round2 } from './machine.ts';
import { benchDatabase } from './database.ts';

const { values: opts } = parseArgs({ args: process.argv.slice(3), options: { rows: { type: 'string', default: '200000' } } });
const ROWS = Number(opts.rows);
const BATCH = 5_000;

function record(i: number): EgressAuditRecord {
  const refused = i % 10 === 0;
  return {
    at: 1_790_000_000_000 + i, keyId: `key_${String(i % 50).padStart(12, '0')}`, renderId: `${String(Math.floor(i / 40)).padStart(22, 'A')}`,
    operation: 'screenshot', host: `cdn${i % 30}.example-customer.com`, port: 443, decision: refused ? 'refused' : 'allowed',
    reason: refused ? 'not_allowed_for_key' : null, mode: 'enforce',
  };
}

async function measure(name: string, store: PolicyStore, bytes: () => Promise<number>): Promise<{ perSec: number; bytesPerRow: number; readMs: number }> {
  await store.migrate();
  const before = await bytes();
  const t0 = performance.now();
  for (let i = 0; i < ROWS; i += BATCH) await store.egress.writeAudit(Array.from({ length: Math.min(BATCH, ROWS - i) }, (_, j) => record(i + j)));
  const perSec = Math.round(ROWS / ((performance.now() - t0) / 1000));
  const bytesPerRow = Math.round((await bytes() - before) / ROWS);
  const t1 = performance.now();
  const read = await store.egress.readAudit({ keyId: record(7).keyId, since: record(0).at, until: record(ROWS).at, limit: 100_000 });
  const readMs = round2(performance.now() - t1);
  console.log(`${name.padEnd(10)} ${String(perSec).padStart(7)} rows/s in transactions of ${BATCH}; ${bytesPerRow} bytes/row with indexes; one key's ${read.length} rows read in ${readMs} ms`);
  return { perSec, bytesPerRow, readMs };
}

printMachine();
console.log(`egress audit bench: ${ROWS} rows per store`);
const dir = mkdtempSync(path.join(os.tmpdir(), 'tintype-bench-audit-'));
const db = await benchDatabase('tintype_bench_audit', { migrate: false });
const url = db.url;
const sizeClient = new pg.Client({ connectionString: url });
try {
  const sqliteStore = openSqliteStore({ dataDir: dir, backgroundCheckpoints: false });
  const sqlite = await measure('sqlite', sqliteStore, async () => readdirSync(dir).reduce((n, f) => n + statSync(path.join(dir, f)).size, 0));
  await sqliteStore.close();
  await sizeClient.connect();
  const pgStore = openPostgresStore({ url, poolSize: 2, statementTimeoutMs: 120_000 });
  const postgres = await measure('postgres', pgStore, async () => {
    const r = await sizeClient.query("SELECT coalesce(pg_total_relation_size(to_regclass('egress_audit')), 0) AS n");
    return Number(r.rows[0].n);
  });
  await pgStore.close();
  // At 10,000 decisions a second, kept TINTYPE_EGRESS_AUDIT_DAYS (30) days.
  const perDay = 10_000 * 86_400;
  const gib = (b: number): number => round2(b / 2 ** 30);
  console.log(`at 10,000 decisions/s: ${perDay} rows a day; 30 days: sqlite ${gib(perDay * 30 * sqlite.bytesPerRow)} GiB, postgres ${gib(perDay * 30 * postgres.bytesPerRow)} GiB`);
  console.log(JSON.stringify({
    bench: 'egress-audit', rows: ROWS, sqlite_rows_per_s: sqlite.perSec, sqlite_bytes_per_row: sqlite.bytesPerRow, sqlite_read_ms: sqlite.readMs,
    postgres_rows_per_s: postgres.perSec, postgres_bytes_per_row: postgres.bytesPerRow, postgres_read_ms: postgres.readMs,
    gib_30_days_at_10k_per_s_postgres: gib(perDay * 30 * postgres.bytesPerRow), gib_30_days_at_10k_per_s_sqlite: gib(perDay * 30 * sqlite.bytesPerRow),
  }));
} finally {
  await sizeClient.end().catch(() => undefined);
  await db.drop();
  rmSync(dir, { recursive: true, force: true });
}
