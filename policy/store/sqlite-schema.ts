/**
 * The SQLite backend's versioned schema (policy/store/sqlite.ts applies it at start or in
 * `tintype migrate`).
 */
import { EGRESS_SQLITE_MIGRATION } from './egress-schema.ts';

/** Versioned schema; a version is applied once, in one transaction, and recorded. */
export const SQLITE_MIGRATIONS: ReadonlyArray<{ version: number; sql: string }> = [
  {
    version: 1,
    sql: `
      CREATE TABLE IF NOT EXISTS api_keys (
        id TEXT PRIMARY KEY,
        hash TEXT NOT NULL UNIQUE,
        name TEXT NOT NULL,
        plan TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        revoked_at INTEGER
      );
      CREATE TABLE IF NOT EXISTS key_state (
        key_id TEXT PRIMARY KEY REFERENCES api_keys(id),
        window_start INTEGER NOT NULL,
        window_count INTEGER NOT NULL,
        in_flight INTEGER NOT NULL
      );
      CREATE TABLE IF NOT EXISTS usage_months (
        key_id TEXT NOT NULL REFERENCES api_keys(id),
        month TEXT NOT NULL,
        used INTEGER NOT NULL,
        PRIMARY KEY (key_id, month)
      );
      CREATE TABLE IF NOT EXISTS leases (
        id TEXT PRIMARY KEY,
        key_id TEXT NOT NULL REFERENCES api_keys(id),
        operation TEXT NOT NULL,
        render INTEGER NOT NULL,
        month TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL
      );
      CREATE INDEX IF NOT EXISTS leases_expiry ON leases (expires_at);
      CREATE TABLE IF NOT EXISTS usage (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        lease_id TEXT NOT NULL UNIQUE,
        key_id TEXT NOT NULL REFERENCES api_keys(id),
        operation TEXT NOT NULL,
        month TEXT NOT NULL,
        status INTEGER,
        error TEXT,
        cache TEXT,
        metered INTEGER NOT NULL,
        outcome TEXT NOT NULL,
        checked_at INTEGER NOT NULL,
        recorded_at INTEGER NOT NULL
      );
      CREATE INDEX IF NOT EXISTS usage_key_month ON usage (key_id, month);
    `,
  },
  {
    // Fewer pages written per check and settle (each one a WAL frame): a lease lives in its
    // primary-key tree alone (WITHOUT ROWID), and the ledger's sequence needs no
    // sqlite_sequence row (rows are never deleted, so the rowid only grows).
    version: 2,
    sql: `
      CREATE TABLE leases_v2 (
        id TEXT PRIMARY KEY,
        key_id TEXT NOT NULL REFERENCES api_keys(id),
        operation TEXT NOT NULL,
        render INTEGER NOT NULL,
        month TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL
      ) WITHOUT ROWID;
      INSERT INTO leases_v2 (id, key_id, operation, render, month, created_at, expires_at)
        SELECT id, key_id, operation, render, month, created_at, expires_at FROM leases;
      DROP TABLE leases;
      ALTER TABLE leases_v2 RENAME TO leases;
      CREATE INDEX leases_expiry ON leases (expires_at);
      CREATE TABLE usage_v2 (
        seq INTEGER PRIMARY KEY,
        lease_id TEXT NOT NULL UNIQUE,
        key_id TEXT NOT NULL REFERENCES api_keys(id),
        operation TEXT NOT NULL,
        month TEXT NOT NULL,
        status INTEGER,
        error TEXT,
        cache TEXT,
        metered INTEGER NOT NULL,
        outcome TEXT NOT NULL,
        checked_at INTEGER NOT NULL,
        recorded_at INTEGER NOT NULL
      );
      INSERT INTO usage_v2 SELECT seq, lease_id, key_id, operation, month, status, error, cache, metered, outcome, checked_at, recorded_at FROM usage;
      DROP TABLE usage;
      ALTER TABLE usage_v2 RENAME TO usage;
      CREATE INDEX usage_key_month ON usage (key_id, month);
    `,
  },
  {
    // A 400 or a 503 closes its lease with no usage record (docs/architecture.md §6); the lease id is kept
    // here for a while so a repeated settle still answers `already` (store.ts CLOSED_LEASE_MEMORY_MS).
    version: 3,
    sql: `
      CREATE TABLE IF NOT EXISTS closed_leases (
        lease_id TEXT PRIMARY KEY,
        closed_at INTEGER NOT NULL
      ) WITHOUT ROWID;
      CREATE INDEX IF NOT EXISTS closed_leases_age ON closed_leases (closed_at);
    `,
  },
  {
    // `tintype usage` reads a key's month as one range of this index and never the table
    // (docs/operations.md "Reading usage"); it replaces usage_key_month, whose prefix it keeps. Building it
    // on a large ledger holds the write lock for the build: upgrade a large ledger at a quiet
    // hour (docs/helm.md "Upgrade").
    version: 4,
    sql: `
      CREATE INDEX IF NOT EXISTS usage_key_month_tally ON usage (key_id, month, operation, status, error, cache, metered, outcome);
      DROP INDEX IF EXISTS usage_key_month;
    `,
  },
  {
    // The ledger counted as it is written (docs/operations.md "Reading usage"): one row per key, month and
    // kind of record (operation, status, error, cache, metered, outcome) with how many records
    // of that kind the ledger holds, kept by triggers in the transaction that writes the
    // ledger, so the two always agree. `tintype usage` reads a month from here, some tens of
    // rows per key however many calls it held, instead of the ledger. The count of an existing ledger
    // is taken here once, inside the migration's write transaction. The index of migration 4
    // served only the report and went into every settle: it goes.
    version: 5,
    sql: `
      CREATE TABLE IF NOT EXISTS usage_tally (
        month TEXT NOT NULL,
        key_id TEXT NOT NULL,
        operation TEXT NOT NULL,
        status INTEGER,
        error TEXT,
        cache TEXT,
        metered INTEGER NOT NULL,
        outcome TEXT NOT NULL,
        n INTEGER NOT NULL
      );
      -- A status is never 0 and a code or cache outcome never empty, so these stand for null.
      CREATE UNIQUE INDEX IF NOT EXISTS usage_tally_kind ON usage_tally
        (month, key_id, operation, coalesce(status, 0), coalesce(error, ''), coalesce(cache, ''), metered, outcome);
      DELETE FROM usage_tally;
      INSERT INTO usage_tally (month, key_id, operation, status, error, cache, metered, outcome, n)
        SELECT month, key_id, operation, status, error, cache, metered, outcome, count(*) FROM usage
        GROUP BY key_id, month, operation, status, error, cache, metered, outcome;
      CREATE TRIGGER IF NOT EXISTS usage_tally_insert AFTER INSERT ON usage BEGIN
        INSERT INTO usage_tally (month, key_id, operation, status, error, cache, metered, outcome, n)
          VALUES (NEW.month, NEW.key_id, NEW.operation, NEW.status, NEW.error, NEW.cache, NEW.metered, NEW.outcome, 1)
          ON CONFLICT (month, key_id, operation, coalesce(status, 0), coalesce(error, ''), coalesce(cache, ''), metered, outcome)
          DO UPDATE SET n = n + 1;
      END;
      -- Policy never deletes from the ledger; an operator who prunes old months keeps the count exact.
      CREATE TRIGGER IF NOT EXISTS usage_tally_delete AFTER DELETE ON usage BEGIN
        UPDATE usage_tally SET n = n - 1 WHERE month = OLD.month AND key_id = OLD.key_id AND operation = OLD.operation
          AND coalesce(status, 0) = coalesce(OLD.status, 0) AND coalesce(error, '') = coalesce(OLD.error, '')
          AND coalesce(cache, '') = coalesce(OLD.cache, '') AND metered = OLD.metered AND outcome = OLD.outcome;
      END;
      DROP INDEX IF EXISTS usage_key_month_tally;
    `,
  },
  {
    // Single-use leases (docs/architecture.md §4): an open lease is claimed by the one attempt
    // that renders it; a release gives it back for the edge's retry, a settle closes it.
    version: 6,
    sql: 'ALTER TABLE leases ADD COLUMN claimed INTEGER NOT NULL DEFAULT 0;',
  },
  EGRESS_SQLITE_MIGRATION,
];
