/**
 * The PostgreSQL backend (pg), selected by DATABASE_URL: shared by every policy replica.
 * Each check, settle and sweep is one call of a plpgsql function (postgres-schema.ts), so one
 * round trip and one transaction; row locks inside make parallel checks exact.
 */
import pg from 'pg';
import { PG_MIGRATIONS } from './postgres-schema.ts';
import { postgresEgress } from './egress-postgres.ts';
import { prepareLedgerMonths } from '../ledger/partitions.ts';
import type { ClaimResult } from '../../lib/policy-contract.ts';
import {
  CLOSED_LEASE_MEMORY_MS,
  STORE_BUDGET_MS,
  type CheckResult,
  type KeyRecord,
  type Limits,
  type PolicyStore,
  type ReserveOutcome,
  type SettleResult,
  type UsageRecord,
} from './store.ts';

export interface PostgresStoreOptions {
  url: string;
  poolSize: number;
  /** A statement that takes longer (lock waits included) fails, and the check fails closed; PG_TIMEOUTS.statementMs by default. */
  statementTimeoutMs?: number;
  /**
   * How long a call may wait for a pooled connection, or for a new one to open, before it fails
   * (and the check fails closed); PG_TIMEOUTS.acquireMs by default. Production keeps the default:
   * it is part of the check's budget inside the edge's ext_authz timeout.
   */
  acquireTimeoutMs?: number;
}

/**
 * STORE_BUDGET_MS split for one check: waiting for a pooled connection (or opening one), then
 * the one statement, whose server-side statement_timeout counts its lock waits too. The server
 * aborts a statement that runs too long, so no reservation commits later than acquireMs +
 * statementMs after the check began: inside the edge's ext_authz timeout. The client gives up
 * a little after the server should have (queryMs), for a server that stopped answering at all.
 */
export const PG_TIMEOUTS = {
  acquireMs: 500,
  statementMs: STORE_BUDGET_MS - 500,
  queryMs: STORE_BUDGET_MS - 500 + 200,
} as const;

/** Migrations run once at start-up, not on a client's clock: they may wait for another replica's migration. */
const MIGRATION_TIMEOUT_MS = 120_000;

/** Any number wide enough for an epoch-ms BIGINT (pg answers int8 as a string). */
const num = (v: unknown): number => Number(v);
const MIGRATION_LOCK = 0x7469_6e74; // "tint": one migrator at a time across processes

export function openPostgresStore(o: PostgresStoreOptions): PolicyStore {
  const pool = new pg.Pool({
    connectionString: o.url,
    max: o.poolSize,
    connectionTimeoutMillis: o.acquireTimeoutMs ?? PG_TIMEOUTS.acquireMs,
    statement_timeout: o.statementTimeoutMs ?? PG_TIMEOUTS.statementMs,
    query_timeout: (o.statementTimeoutMs ?? PG_TIMEOUTS.statementMs) + (PG_TIMEOUTS.queryMs - PG_TIMEOUTS.statementMs),
    idleTimeoutMillis: 30_000,
  });
  // An idle client that loses its server must not crash the process; the next query fails closed.
  pool.on('error', () => {});
  let ended = false;

  const one = async <R>(name: string, text: string, values: unknown[]): Promise<R | undefined> =>
    (await pool.query({ name, text, values })).rows[0] as R | undefined;

  return {
    kind: 'postgres',
    egress: postgresEgress(pool),
    async migrate(options = {}) {
      const timeoutMs = options.timeoutMs ?? MIGRATION_TIMEOUT_MS;
      const c = await pool.connect();
      // The check's budget does not apply here: a long migration, or waiting on another replica's.
      // (pg reads a per-query query_timeout; its types do not declare it.)
      const q = (text: string, values?: unknown[]) => c.query({ text, values, query_timeout: timeoutMs } as pg.QueryConfig);
      try {
        await q('BEGIN');
        await q(`SET LOCAL statement_timeout = ${Math.trunc(timeoutMs)}`);
        await q('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
        await q('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)');
        const done = new Set((await q('SELECT version FROM schema_migrations')).rows.map((r) => Number(r.version)));
        for (const m of PG_MIGRATIONS) {
          if (done.has(m.version)) continue;
          await q(m.sql);
          await q('INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)', [m.version, Date.now()]);
        }
        // The ledger's months to come, made here with the migrating role's rights (docs/operations.md "Ledger retention").
        await prepareLedgerMonths({ query: q }, Date.now());
        await q('COMMIT');
      } catch (err) {
        await c.query('ROLLBACK').catch(() => {});
        throw err;
      } finally {
        c.release();
      }
    },
    async pendingMigrations() {
      // Read-only: a pod that waits for the schema needs no DDL rights, and takes no lock.
      const present = await pool.query("SELECT to_regclass('schema_migrations') IS NOT NULL AS present");
      const done = present.rows[0]?.present === true
        ? new Set((await pool.query('SELECT version FROM schema_migrations')).rows.map((r) => Number(r.version)))
        : new Set<number>();
      return PG_MIGRATIONS.map((m) => m.version).filter((v) => !done.has(v));
    },
    async findKey(hash) {
      const r = await one<KeyRow>('find_key', 'SELECT id, name, plan, created_at, revoked_at FROM api_keys WHERE hash = $1', [hash]);
      return r === undefined ? undefined : keyFromRow(r);
    },
    async createKey(k) {
      await pool.query('INSERT INTO api_keys (id, hash, name, plan, created_at, revoked_at) VALUES ($1, $2, $3, $4, $5, $6)',
        [k.id, k.hash, k.name, k.plan, k.createdAt, k.revokedAt]);
    },
    async listKeys() {
      // Every key, read at a start or by `tintype keys list`, never on a check's path: a check's
      // budget is not its bound (100,000 keys on a loaded database outlast it).
      const c = await pool.connect();
      try {
        await c.query('BEGIN READ ONLY');
        await c.query(`SET LOCAL statement_timeout = ${MIGRATION_TIMEOUT_MS}`);
        const r = await c.query({ text: 'SELECT id, name, plan, created_at, revoked_at FROM api_keys ORDER BY created_at, id', query_timeout: MIGRATION_TIMEOUT_MS } as pg.QueryConfig);
        await c.query('COMMIT');
        return (r.rows as KeyRow[]).map(keyFromRow);
      } catch (err) {
        await c.query('ROLLBACK').catch(() => {});
        throw err;
      } finally {
        c.release();
      }
    },
    async revokeKey(id, now) {
      const r = await pool.query('UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL', [now, id]);
      return r.rowCount === 1;
    },
    async check(r): Promise<CheckResult> {
      const names = Object.keys(r.plans);
      const limits = names.map((n) => r.plans[n]!);
      const row = await one<{ o_outcome: string; o_count: number; o_key: string | null; o_plan: string | null }>(
        'check',
        'SELECT o_outcome, o_count, o_key, o_plan FROM tintype_check($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)',
        [r.hash, r.leaseId, r.operation, r.render, r.now, r.windowStart, r.month, r.expiresAt,
          names, limits.map((l) => l.perMinute), limits.map((l) => l.monthlyQuota), limits.map((l) => l.concurrentRenders)],
      );
      if (row === undefined) throw new Error('tintype_check answered nothing');
      if (row.o_outcome === 'unauthorized') return { outcome: 'unauthorized' };
      if (row.o_outcome === 'no_plan') return { outcome: 'no_plan', keyId: String(row.o_key), plan: String(row.o_plan) };
      const plan: Limits = r.plans[String(row.o_plan)]!;
      return { outcome: row.o_outcome as ReserveOutcome, keyId: String(row.o_key), limits: plan, windowCount: num(row.o_count) };
    },
    async claim(l) {
      // One statement: of two claims at once the second waits on the row lock, then finds it taken.
      const row = await one<{ r: ClaimResult }>('claim', `WITH c AS (UPDATE leases SET claimed = TRUE WHERE id = $1 AND key_id = $2 AND operation = $3 AND NOT claimed RETURNING 1)
        SELECT CASE WHEN EXISTS (SELECT 1 FROM c) THEN 'claimed' WHEN EXISTS (SELECT 1 FROM leases WHERE id = $1 AND key_id = $2 AND operation = $3) THEN 'held' ELSE 'spent' END AS r`,
      [l.id, l.keyId, l.operation]);
      return row?.r ?? 'held';
    },
    async release(l) {
      await one('release', 'UPDATE leases SET claimed = FALSE WHERE id = $1 AND key_id = $2 AND operation = $3', [l.id, l.keyId, l.operation]);
    },
    async settle(s) {
      // Only a recorded outcome can be metered: an unrecorded one must give its reservation back.
      const row = await one<{ r: string }>('settle', 'SELECT tintype_settle($1, $2, $3, $4, $5, $6, $7) AS r',
        [s.leaseId, s.status, s.error, s.cache, s.metered && s.recorded, s.recorded, s.now]);
      return row?.r as SettleResult;
    },
    async expire(now) {
      await one('forget_closed', 'SELECT tintype_forget_closed($1)', [now - CLOSED_LEASE_MEMORY_MS]);
      const row = await one<{ n: number }>('expire', 'SELECT tintype_expire($1) AS n', [now]);
      return num(row?.n ?? 0);
    },
    async monthUsed(keyId, month) {
      const r = await one<{ used: number }>('month_used', 'SELECT used FROM usage_months WHERE key_id = $1 AND month = $2', [keyId, month]);
      return num(r?.used ?? 0);
    },
    async inFlight(keyId) {
      const r = await one<{ in_flight: number }>('in_flight', 'SELECT in_flight FROM key_state WHERE key_id = $1', [keyId]);
      return num(r?.in_flight ?? 0);
    },
    async openLeases(keyId) {
      const r = await one<{ n: string }>('open_leases', 'SELECT count(*) AS n FROM leases WHERE key_id = $1', [keyId]);
      return num(r?.n ?? 0);
    },
    async usage(keyId) {
      const r = await pool.query('SELECT * FROM usage WHERE key_id = $1 ORDER BY seq', [keyId]);
      return (r.rows as UsageRow[]).map(usageFromRow);
    },
    async ping() {
      // Touches the table every check locks, so a store that cannot check is not ready.
      await pool.query('SELECT 1 FROM key_state LIMIT 1');
    },
    async close() {
      if (ended) return;
      ended = true;
      await pool.end();
    },
  };
}

interface KeyRow {
  id: string;
  name: string;
  plan: string;
  created_at: string;
  revoked_at: string | null;
}

function keyFromRow(r: KeyRow): KeyRecord {
  return { id: r.id, name: r.name, plan: r.plan, createdAt: num(r.created_at), revokedAt: r.revoked_at === null ? null : num(r.revoked_at) };
}

interface UsageRow {
  lease_id: string;
  key_id: string;
  operation: string;
  month: string;
  status: number | null;
  error: string | null;
  cache: string | null;
  metered: boolean;
  outcome: 'settled' | 'unsettled';
  checked_at: string;
  recorded_at: string;
}

function usageFromRow(r: UsageRow): UsageRecord {
  return {
    leaseId: r.lease_id, keyId: r.key_id, operation: r.operation, month: r.month, status: r.status,
    error: r.error, cache: r.cache, metered: r.metered, outcome: r.outcome,
    checkedAt: num(r.checked_at), recordedAt: num(r.recorded_at),
  };
}
