/**
 * The tables of keys' egress policies and of the egress audit trail (docs/operations.md "Egress
 * policy and audit"), as one more version of each store's migrations (sqlite.ts, postgres-schema.ts).
 *
 * - `key_egress`: a key's policy as its one line of text (lib/egress.ts egressText); no row, no
 *   policy. `egress_generation` moves in the same transaction as every change, so a replica that
 *   polls it (policy/egress.ts) knows when to read the table again, in commit order.
 * - `egress_audit`: one row per guard decision of a keyed render; host and port, never a path or
 *   query. Read by key and time (`egress_audit_key_at`); pruned by time (`egress_audit_at`).
 *   No foreign key: rows arrive in batches at the pace of the guards, and a key's trail outlives
 *   nothing it needs.
 */
export const EGRESS_SQLITE_MIGRATION = {
  version: 7,
  sql: `
    CREATE TABLE IF NOT EXISTS key_egress (
      key_id TEXT PRIMARY KEY REFERENCES api_keys(id),
      policy TEXT NOT NULL,
      updated_at INTEGER NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS egress_generation (id INTEGER PRIMARY KEY CHECK (id = 1), n INTEGER NOT NULL);
    INSERT INTO egress_generation (id, n) VALUES (1, 0) ON CONFLICT DO NOTHING;
    CREATE TABLE IF NOT EXISTS egress_audit (
      at INTEGER NOT NULL,
      key_id TEXT NOT NULL,
      render_id TEXT NOT NULL,
      operation TEXT NOT NULL,
      host TEXT,
      port INTEGER,
      decision TEXT NOT NULL,
      reason TEXT,
      mode TEXT
    );
    CREATE INDEX IF NOT EXISTS egress_audit_key_at ON egress_audit (key_id, at);
    CREATE INDEX IF NOT EXISTS egress_audit_at ON egress_audit (at);
  `,
} as const;

export const EGRESS_PG_MIGRATION = {
  version: 7,
  sql: `
    CREATE TABLE IF NOT EXISTS key_egress (
      key_id TEXT PRIMARY KEY REFERENCES api_keys(id),
      policy TEXT NOT NULL,
      updated_at BIGINT NOT NULL
    );
    CREATE TABLE IF NOT EXISTS egress_generation (id INTEGER PRIMARY KEY CHECK (id = 1), n BIGINT NOT NULL);
    INSERT INTO egress_generation (id, n) VALUES (1, 0) ON CONFLICT DO NOTHING;
    CREATE TABLE IF NOT EXISTS egress_audit (
      seq BIGINT GENERATED ALWAYS AS IDENTITY,
      at BIGINT NOT NULL,
      key_id TEXT NOT NULL,
      render_id TEXT NOT NULL,
      operation TEXT NOT NULL,
      host TEXT,
      port INTEGER,
      decision TEXT NOT NULL,
      reason TEXT,
      mode TEXT
    );
    CREATE INDEX IF NOT EXISTS egress_audit_key_at ON egress_audit (key_id, at, seq);
    CREATE INDEX IF NOT EXISTS egress_audit_at ON egress_audit (at);
  `,
} as const;
