/**
 * Reads a month of the SQLite ledger for the usage report without disturbing policy: a
 * read-only connection of its own, one read transaction (WAL: it never blocks a check or a
 * settle, and they never block it), in a worker thread so that inside `tintype policy` or
 * `tintype start` the read never holds up the event loop. The month's records are counted by
 * usage_tally (migration 5): one range of its index, a row per key and kind of record, however
 * many calls the month held.
 */
import { sqliteDriverPath } from './store/sqlite-driver.ts';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { UsageReader } from './usage-reader.ts';
import type { UsageSnapshot } from './usage-report.ts';

const WORKER = `
  const { parentPort, workerData } = require('node:worker_threads');
  const Database = require(workerData.driver);
  const { file, month, keyId } = workerData;
  let db;
  try {
    db = new Database(file, { readonly: true, fileMustExist: true });
    db.pragma('busy_timeout = 5000');
    const one = keyId !== undefined;
    db.exec('BEGIN');
    const keys = (one
      ? db.prepare('SELECT id, name, plan, created_at, revoked_at FROM api_keys WHERE id = ?').all(keyId)
      : db.prepare('SELECT id, name, plan, created_at, revoked_at FROM api_keys ORDER BY created_at, id').all())
      .map((r) => ({ id: r.id, name: r.name, plan: r.plan, createdAt: r.created_at, revokedAt: r.revoked_at }));
    // usage_tally (migration 5) counts the ledger as it is written; a store policy has not yet
    // migrated is counted from the ledger itself, slower and as exact.
    const counted = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'usage_tally'").get() !== undefined;
    const rows = counted
      ? db.prepare('SELECT key_id, operation, status, error, cache, metered, outcome, n FROM usage_tally WHERE month = ?' +
          (one ? ' AND key_id = ?' : '') + ' AND n > 0').all(...(one ? [month, keyId] : [month]))
      : db.prepare('SELECT key_id, operation, status, error, cache, metered, outcome, count(*) AS n FROM usage WHERE month = ?' +
          (one ? ' AND key_id = ?' : '') + ' GROUP BY key_id, operation, status, error, cache, metered, outcome').all(...(one ? [month, keyId] : [month]));
    const tallies = rows.map((r) => ({ keyId: r.key_id, operation: r.operation, status: r.status, error: r.error, cache: r.cache,
      metered: r.metered === 1, outcome: r.outcome, n: r.n }));
    const used = db.prepare('SELECT key_id AS keyId, used FROM usage_months WHERE month = ?' + (one ? ' AND key_id = ?' : ''))
      .all(...(one ? [month, keyId] : [month]));
    const open = db.prepare('SELECT key_id AS keyId, count(*) AS n FROM leases WHERE month = ?' + (one ? ' AND key_id = ?' : '') + ' GROUP BY key_id')
      .all(...(one ? [month, keyId] : [month]));
    db.exec('COMMIT');
    parentPort.postMessage({ snapshot: { keys, tallies, used, open } });
  } catch (err) {
    parentPort.postMessage({ error: err && err.message ? err.message : String(err), code: err && err.code });
  } finally {
    if (db !== undefined && db.open) db.close();
  }
`;

/** A reader of `policy.sqlite` in `dataDir`; each read is a worker thread of its own. */
export function sqliteUsageReader(dataDir: string): UsageReader {
  const file = path.join(dataDir, 'policy.sqlite');
  return {
    read(month, keyId) {
      return new Promise<UsageSnapshot>((resolve, reject) => {
        const worker = new Worker(WORKER, { eval: true, workerData: { driver: sqliteDriverPath, file, month, keyId } });
        let answered = false;
        worker.once('message', (m: { snapshot?: UsageSnapshot; error?: string; code?: string }) => {
          answered = true;
          if (m.snapshot !== undefined) resolve(m.snapshot);
          else if (m.code === 'SQLITE_CANTOPEN') reject(new Error(`no policy database at ${file} (has policy run with this TINTYPE_DATA_DIR?)`));
          else reject(new Error(`reading ${file}: ${m.error}`));
        });
        worker.once('error', (err) => {
          answered = true;
          reject(err);
        });
        worker.once('exit', (code) => {
          if (!answered) reject(new Error(`the usage reader stopped (exit ${code})`));
        });
      });
    },
    async close() {},
  };
}
