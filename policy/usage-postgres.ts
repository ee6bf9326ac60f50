/**
 * Reads a month of the PostgreSQL ledger for the usage report without disturbing policy: a
 * connection of its own (not policy's pool, whose statements have a check's 1 s budget), one
 * REPEATABLE READ READ ONLY transaction, so every figure comes from the same snapshot and no
 * row is locked. The month's records are counted by usage_tally (migration 5): one range of
 * its index, a row per key and kind of record, however many calls the month held.
 */
import pg from 'pg';
import type { UsageReader } from './usage-reader.ts';
import type { LedgerTally, UsageSnapshot } from './usage-report.ts';

/** The longest one read may take: usage_tally answers far sooner; a ledger not yet migrated, counted whole, may take minutes. */
const READ_TIMEOUT_MS = 300_000;
const CONNECT_TIMEOUT_MS = 5_000;

export function postgresUsageReader(url: string): UsageReader {
  return {
    async read(month, keyId) {
      const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: CONNECT_TIMEOUT_MS, statement_timeout: READ_TIMEOUT_MS });
      // A server that goes away mid-read fails this read, not the process.
      c.on('error', () => {});
      await c.connect();
      try {
        await c.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
        const one = keyId !== undefined;
        const keys = await c.query<{ id: string; name: string; plan: string; created_at: string; revoked_at: string | null }>(
          `SELECT id, name, plan, created_at, revoked_at FROM api_keys ${one ? 'WHERE id = $1' : ''} ORDER BY created_at, id`,
          one ? [keyId] : []);
        // usage_tally (migration 5) counts the ledger as it is written; a store policy has not yet
        // migrated is counted from the ledger itself, slower and as exact.
        const counted = ((await c.query<{ t: string | null }>("SELECT to_regclass('usage_tally')::text AS t")).rows[0]?.t ?? null) !== null;
        const tallies = await c.query<{ key_id: string; operation: string; status: number | null; error: string | null; cache: string | null; metered: boolean; outcome: 'settled' | 'unsettled'; n: string }>(
          counted
            ? `SELECT key_id, operation, status, error, cache, metered, outcome, n FROM usage_tally
               WHERE month = $1 ${one ? 'AND key_id = $2' : ''} AND n > 0`
            : `SELECT key_id, operation, status, error, cache, metered, outcome, count(*) AS n FROM usage
               WHERE month = $1 ${one ? 'AND key_id = $2' : ''} GROUP BY key_id, operation, status, error, cache, metered, outcome`,
          one ? [month, keyId] : [month]);
        const used = await c.query<{ key_id: string; used: number }>(
          `SELECT key_id, used FROM usage_months WHERE month = $1 ${one ? 'AND key_id = $2' : ''}`, one ? [month, keyId] : [month]);
        const open = await c.query<{ key_id: string; n: string }>(
          `SELECT key_id, count(*) AS n FROM leases WHERE month = $1 ${one ? 'AND key_id = $2' : ''} GROUP BY key_id`, one ? [month, keyId] : [month]);
        await c.query('COMMIT');
        const snapshot: UsageSnapshot = {
          keys: keys.rows.map((r) => ({ id: r.id, name: r.name, plan: r.plan, createdAt: Number(r.created_at), revokedAt: r.revoked_at === null ? null : Number(r.revoked_at) })),
          tallies: tallies.rows.map((r): LedgerTally => ({
            keyId: r.key_id, operation: r.operation, status: r.status, error: r.error, cache: r.cache, metered: r.metered, outcome: r.outcome, n: Number(r.n),
          })),
          used: used.rows.map((r) => ({ keyId: r.key_id, used: Number(r.used) })),
          open: open.rows.map((r) => ({ keyId: r.key_id, n: Number(r.n) })),
        };
        return snapshot;
      } finally {
        await c.end().catch(() => {});
      }
    },
    async close() {},
  };
}
