/**
 * PostgreSQL schema of policy state, as versioned migrations. The check, the settle and the
 * expiry are plpgsql functions so each is one round trip and one transaction. Exactness under
 * parallel checks from any number of replicas comes from row locks taken in one order
 * everywhere: lease ▸ key_state ▸ usage_months (a reservation takes key_state ▸ usage_months
 * and only inserts a new lease), so no two transactions can wait on each other in a cycle.
 */
import { EGRESS_PG_MIGRATION } from './egress-schema.ts';
import { LEDGER_PG_MIGRATION, LEDGER_READ_PG_MIGRATION } from './ledger-schema.ts';

export const PG_MIGRATIONS: ReadonlyArray<{ version: number; sql: string }> = [
  {
    version: 1,
    sql: `
      CREATE TABLE IF NOT EXISTS api_keys (
        id TEXT PRIMARY KEY,
        hash TEXT NOT NULL UNIQUE,
        name TEXT NOT NULL,
        plan TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        revoked_at BIGINT
      );
      CREATE TABLE IF NOT EXISTS key_state (
        key_id TEXT PRIMARY KEY REFERENCES api_keys(id),
        window_start BIGINT NOT NULL,
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
        render BOOLEAN NOT NULL,
        month TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        expires_at BIGINT NOT NULL
      );
      CREATE INDEX IF NOT EXISTS leases_expiry ON leases (expires_at);
      CREATE TABLE IF NOT EXISTS usage (
        seq BIGSERIAL PRIMARY KEY,
        lease_id TEXT NOT NULL UNIQUE,
        key_id TEXT NOT NULL REFERENCES api_keys(id),
        operation TEXT NOT NULL,
        month TEXT NOT NULL,
        status INTEGER,
        error TEXT,
        cache TEXT,
        metered BOOLEAN NOT NULL,
        outcome TEXT NOT NULL,
        checked_at BIGINT NOT NULL,
        recorded_at BIGINT NOT NULL
      );
      CREATE INDEX IF NOT EXISTS usage_key_month ON usage (key_id, month);

      CREATE OR REPLACE FUNCTION tintype_reserve(
        p_key TEXT, p_lease TEXT, p_op TEXT, p_render BOOLEAN, p_now BIGINT, p_window BIGINT,
        p_month TEXT, p_expires BIGINT, p_per_minute INTEGER, p_quota INTEGER, p_concurrent INTEGER,
        OUT o_outcome TEXT, OUT o_count INTEGER)
      LANGUAGE plpgsql AS $fn$
      DECLARE
        s_window BIGINT;
        s_count INTEGER;
        s_in_flight INTEGER;
        m_used INTEGER;
      BEGIN
        INSERT INTO key_state (key_id, window_start, window_count, in_flight)
          VALUES (p_key, p_window, 0, 0) ON CONFLICT (key_id) DO NOTHING;
        SELECT window_start, window_count, in_flight INTO s_window, s_count, s_in_flight
          FROM key_state WHERE key_id = p_key FOR UPDATE;
        IF s_window <> p_window THEN s_count := 0; END IF;
        o_count := s_count;
        -- A full window refuses without writing: the refusal would change nothing a client sees.
        IF s_count >= p_per_minute THEN o_outcome := 'rate_limited'; RETURN; END IF;
        s_count := s_count + 1;
        o_count := s_count;
        UPDATE key_state SET window_start = p_window, window_count = s_count WHERE key_id = p_key;
        SELECT used INTO m_used FROM usage_months WHERE key_id = p_key AND month = p_month FOR UPDATE;
        IF COALESCE(m_used, 0) >= p_quota THEN o_outcome := 'quota_exceeded'; RETURN; END IF;
        IF p_render AND s_in_flight >= p_concurrent THEN o_outcome := 'concurrent_limit'; RETURN; END IF;
        INSERT INTO usage_months (key_id, month, used) VALUES (p_key, p_month, 1)
          ON CONFLICT (key_id, month) DO UPDATE SET used = usage_months.used + 1;
        IF p_render THEN UPDATE key_state SET in_flight = in_flight + 1 WHERE key_id = p_key; END IF;
        INSERT INTO leases (id, key_id, operation, render, month, created_at, expires_at)
          VALUES (p_lease, p_key, p_op, p_render, p_month, p_now, p_expires);
        o_outcome := 'granted';
      END
      $fn$;

      CREATE OR REPLACE FUNCTION tintype_close(
        l leases, p_status INTEGER, p_error TEXT, p_cache TEXT, p_metered BOOLEAN, p_outcome TEXT, p_now BIGINT)
      RETURNS void LANGUAGE plpgsql AS $fn$
      BEGIN
        -- key_state first, always, to keep the lock order of the reservation.
        UPDATE key_state SET in_flight = in_flight - (CASE WHEN l.render THEN 1 ELSE 0 END) WHERE key_id = l.key_id;
        IF NOT p_metered THEN
          UPDATE usage_months SET used = used - 1 WHERE key_id = l.key_id AND month = l.month;
        END IF;
        INSERT INTO usage (lease_id, key_id, operation, month, status, error, cache, metered, outcome, checked_at, recorded_at)
          VALUES (l.id, l.key_id, l.operation, l.month, p_status, p_error, p_cache, p_metered, p_outcome, l.created_at, p_now);
      END
      $fn$;

      CREATE OR REPLACE FUNCTION tintype_settle(
        p_lease TEXT, p_status INTEGER, p_error TEXT, p_cache TEXT, p_metered BOOLEAN, p_now BIGINT)
      RETURNS TEXT LANGUAGE plpgsql AS $fn$
      DECLARE
        l leases%ROWTYPE;
      BEGIN
        DELETE FROM leases WHERE id = p_lease RETURNING * INTO l;
        IF NOT FOUND THEN
          -- A parallel settle of the same lease waited on the row lock and finds it gone.
          IF EXISTS (SELECT 1 FROM usage WHERE lease_id = p_lease) THEN RETURN 'already'; END IF;
          RETURN 'unknown';
        END IF;
        PERFORM tintype_close(l, p_status, p_error, p_cache, p_metered, 'settled', p_now);
        RETURN 'settled';
      END
      $fn$;

      CREATE OR REPLACE FUNCTION tintype_expire(p_now BIGINT) RETURNS INTEGER LANGUAGE plpgsql AS $fn$
      DECLARE
        l leases%ROWTYPE;
        n INTEGER := 0;
      BEGIN
        -- SKIP LOCKED: a lease being settled right now is the settle's, and replicas sweep apart.
        FOR l IN SELECT * FROM leases WHERE expires_at <= p_now ORDER BY expires_at LIMIT 1000 FOR UPDATE SKIP LOCKED LOOP
          DELETE FROM leases WHERE id = l.id;
          PERFORM tintype_close(l, NULL, NULL, NULL, FALSE, 'unsettled', p_now);
          n := n + 1;
        END LOOP;
        RETURN n;
      END
      $fn$;
    `,
  },
  {
    // The key lookup joins the reservation: one round trip and one statement per check. The
    // plans in force come as parallel arrays, since they live in the plans file, not the database.
    version: 2,
    sql: `
      CREATE OR REPLACE FUNCTION tintype_check(
        p_hash TEXT, p_lease TEXT, p_op TEXT, p_render BOOLEAN, p_now BIGINT, p_window BIGINT,
        p_month TEXT, p_expires BIGINT, p_plans TEXT[], p_per_minute INTEGER[], p_quota INTEGER[],
        p_concurrent INTEGER[], OUT o_outcome TEXT, OUT o_count INTEGER, OUT o_key TEXT, OUT o_plan TEXT)
      LANGUAGE plpgsql AS $fn$
      DECLARE
        k_id TEXT;
        k_plan TEXT;
        k_revoked BIGINT;
        i INTEGER;
      BEGIN
        o_count := 0;
        SELECT id, plan, revoked_at INTO k_id, k_plan, k_revoked FROM api_keys WHERE hash = p_hash;
        -- Unknown and revoked answer alike: nothing about the key leaves this function.
        IF k_id IS NULL OR k_revoked IS NOT NULL THEN o_outcome := 'unauthorized'; RETURN; END IF;
        o_key := k_id;
        o_plan := k_plan;
        i := array_position(p_plans, k_plan);
        IF i IS NULL THEN o_outcome := 'no_plan'; RETURN; END IF;
        SELECT r.o_outcome, r.o_count INTO o_outcome, o_count
          FROM tintype_reserve(k_id, p_lease, p_op, p_render, p_now, p_window, p_month, p_expires,
            p_per_minute[i], p_quota[i], p_concurrent[i]) r;
      END
      $fn$;
    `,
  },
  {
    // A 400 or a 503 closes its lease with no usage record (docs/architecture.md §6): places freed, the
    // reservation returned, and the lease id kept a while in closed_leases so a repeated settle
    // still answers 'already'. The settle gains p_recorded as a new overload; the old six-argument
    // tintype_settle stays, so a replica not yet upgraded keeps working while others are.
    version: 3,
    sql: `
      CREATE TABLE IF NOT EXISTS closed_leases (
        lease_id TEXT PRIMARY KEY,
        closed_at BIGINT NOT NULL
      );
      CREATE INDEX IF NOT EXISTS closed_leases_age ON closed_leases (closed_at);

      CREATE OR REPLACE FUNCTION tintype_settle(
        p_lease TEXT, p_status INTEGER, p_error TEXT, p_cache TEXT, p_metered BOOLEAN, p_recorded BOOLEAN, p_now BIGINT)
      RETURNS TEXT LANGUAGE plpgsql AS $fn$
      DECLARE
        l leases%ROWTYPE;
      BEGIN
        DELETE FROM leases WHERE id = p_lease RETURNING * INTO l;
        IF NOT FOUND THEN
          -- A parallel settle of the same lease waited on the row lock and finds it gone.
          IF EXISTS (SELECT 1 FROM usage WHERE lease_id = p_lease)
            OR EXISTS (SELECT 1 FROM closed_leases WHERE lease_id = p_lease) THEN RETURN 'already'; END IF;
          RETURN 'unknown';
        END IF;
        IF p_recorded THEN
          PERFORM tintype_close(l, p_status, p_error, p_cache, p_metered, 'settled', p_now);
        ELSE
          -- The lock order of tintype_close: key_state, then usage_months.
          UPDATE key_state SET in_flight = in_flight - (CASE WHEN l.render THEN 1 ELSE 0 END) WHERE key_id = l.key_id;
          UPDATE usage_months SET used = used - 1 WHERE key_id = l.key_id AND month = l.month;
          INSERT INTO closed_leases (lease_id, closed_at) VALUES (l.id, p_now);
        END IF;
        RETURN 'settled';
      END
      $fn$;

      CREATE OR REPLACE FUNCTION tintype_forget_closed(p_before BIGINT) RETURNS INTEGER LANGUAGE plpgsql AS $fn$
      DECLARE
        n INTEGER;
      BEGIN
        DELETE FROM closed_leases WHERE lease_id IN
          (SELECT lease_id FROM closed_leases WHERE closed_at <= p_before LIMIT 1000);
        GET DIAGNOSTICS n = ROW_COUNT;
        RETURN n;
      END
      $fn$;
    `,
  },
  {
    // `tintype usage` reads a key's month as one range of this index (docs/operations.md "Reading usage");
    // it replaces usage_key_month, whose prefix it keeps. IF NOT EXISTS: an operator with a
    // large ledger builds it first with CREATE INDEX CONCURRENTLY under this name, so the
    // migration does not block the ledger's writes while it builds.
    version: 4,
    sql: `
      CREATE INDEX IF NOT EXISTS usage_key_month_tally ON usage (key_id, month, operation, status, error, cache, metered, outcome);
      DROP INDEX IF EXISTS usage_key_month;
    `,
  },
  {
    // The ledger counted as it is written (docs/operations.md "Reading usage"): one row per key, month and
    // kind of record (operation, status, error, cache, metered, outcome) with how many records
    // of that kind the ledger holds, kept by a trigger in the transaction that writes the
    // ledger, so the two always agree. `tintype usage` reads a month from here, some tens of
    // rows per key however many calls it held, instead of the ledger. The trigger's row lock adds no
    // wait: a transaction that counts a record of a key already holds that key's key_state row
    // (tintype_close takes it first), so no other can be counting the same key meanwhile.
    // The count of an existing ledger is taken once here, the ledger's writes held back from
    // the trigger's creation to the migration's commit so that no record is missed or counted
    // twice. The index of migration 4 served only the report and went into every settle: it goes.
    version: 5,
    sql: `
      LOCK TABLE usage IN SHARE ROW EXCLUSIVE MODE;
      CREATE TABLE IF NOT EXISTS usage_tally (
        month TEXT NOT NULL,
        key_id TEXT NOT NULL,
        operation TEXT NOT NULL,
        status INTEGER,
        error TEXT,
        cache TEXT,
        metered BOOLEAN NOT NULL,
        outcome TEXT NOT NULL,
        n BIGINT NOT NULL
      ) WITH (fillfactor = 50);
      -- A status is never 0 and a code or cache outcome never empty, so these stand for null.
      CREATE UNIQUE INDEX IF NOT EXISTS usage_tally_kind ON usage_tally
        (month, key_id, operation, (coalesce(status, 0)), (coalesce(error, '')), (coalesce(cache, '')), metered, outcome);

      CREATE OR REPLACE FUNCTION tintype_usage_tally() RETURNS trigger LANGUAGE plpgsql AS $fn$
      BEGIN
        IF TG_OP = 'INSERT' THEN
          INSERT INTO usage_tally (month, key_id, operation, status, error, cache, metered, outcome, n)
            VALUES (NEW.month, NEW.key_id, NEW.operation, NEW.status, NEW.error, NEW.cache, NEW.metered, NEW.outcome, 1)
            ON CONFLICT (month, key_id, operation, (coalesce(status, 0)), (coalesce(error, '')), (coalesce(cache, '')), metered, outcome)
            DO UPDATE SET n = usage_tally.n + 1;
        ELSE
          -- Policy never deletes from the ledger; an operator who prunes old months keeps the count exact.
          UPDATE usage_tally SET n = n - 1 WHERE month = OLD.month AND key_id = OLD.key_id AND operation = OLD.operation
            AND coalesce(status, 0) = coalesce(OLD.status, 0) AND coalesce(error, '') = coalesce(OLD.error, '')
            AND coalesce(cache, '') = coalesce(OLD.cache, '') AND metered = OLD.metered AND outcome = OLD.outcome;
        END IF;
        RETURN NULL;
      END
      $fn$;
      DROP TRIGGER IF EXISTS usage_tally ON usage;
      CREATE TRIGGER usage_tally AFTER INSERT OR DELETE ON usage FOR EACH ROW EXECUTE FUNCTION tintype_usage_tally();

      DELETE FROM usage_tally;
      INSERT INTO usage_tally (month, key_id, operation, status, error, cache, metered, outcome, n)
        SELECT month, key_id, operation, status, error, cache, metered, outcome, count(*) FROM usage
        GROUP BY key_id, month, operation, status, error, cache, metered, outcome;
      DROP INDEX IF EXISTS usage_key_month_tally;
    `,
  },
  {
    // Single-use leases (docs/architecture.md §4): an open lease is claimed by the one attempt
    // that renders it; a release gives it back for the edge's retry, a settle closes it.
    version: 6,
    sql: 'ALTER TABLE leases ADD COLUMN IF NOT EXISTS claimed BOOLEAN NOT NULL DEFAULT FALSE;',
  },
  EGRESS_PG_MIGRATION,
  LEDGER_PG_MIGRATION,
  LEDGER_READ_PG_MIGRATION,
];
