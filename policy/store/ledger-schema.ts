/**
 * The PostgreSQL ledger partitioned by month (docs/operations.md "Usage ledger" and "Ledger
 * retention"), as migration 8 of postgres-schema.ts.
 *
 * - `usage` becomes a table partitioned by RANGE on `month` (`YYYY-MM`), one partition per month
 *   named `usage_YYYY_MM`; dropping a month of raw records is dropping its partition. A record is
 *   unique by (lease_id, month): the partition key must be part of a unique key, and a lease is
 *   checked in one month only, so this is the lease's one record.
 * - `usage_tally` (migration 5) stays the per-key monthly count `tintype usage` reads, kept forever.
 *   It is no longer kept by a row trigger: `tintype_ledger_insert` inserts a batch of records and
 *   counts, in the same statement, only the records it actually inserted (a record already there
 *   is skipped and not counted again). Both writers of the ledger call it: the PostgreSQL store's
 *   settle and expiry (one record each) and the ledger sink (policy/ledger/, a batch of the
 *   stream's events). A partition dropped later fires nothing, so the tally outlives it.
 * - `tintype_ledger_partition` makes a month's partition when it is missing. SECURITY DEFINER: it
 *   runs as the role that migrated (the owner of `usage`), so policy, whose role may have no DDL
 *   rights (docs/helm.md "Upgrade"), still gets a month's partition on demand.
 *   `tintype_ledger_drop_before` drops the partitions of months before a month, the same way.
 *
 * An unpartitioned ledger is converted in place, in the migration's one transaction: the old
 * table is renamed, its rows copied into the month partitions, and dropped; its sequence goes to
 * the new table. The tally already counts those rows and is left as it is. A failure rolls the
 * whole migration back and leaves the old table as it was.
 */

/** One lock id for making and dropping partitions, across every process ("tint" + 1). */
const PARTITION_LOCK = 0x7469_6e75;
/**
 * tintype_ledger_partition(month): the month's partition of `usage`, made when missing (made by
 * one of two writers at once, found by the other); `withOptions` are its storage parameters.
 */
const partitionFunction = (withOptions: string): string => `
    CREATE OR REPLACE FUNCTION tintype_ledger_partition(p_month TEXT) RETURNS TEXT
    LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $fn$
    DECLARE
      p_name TEXT;
    BEGIN
      IF p_month IS NULL OR p_month !~ '^[0-9]{4}-(0[1-9]|1[0-2])$' THEN
        RAISE EXCEPTION 'not a ledger month (YYYY-MM): %', p_month USING ERRCODE = '22023';
      END IF;
      p_name := 'usage_' || replace(p_month, '-', '_');
      IF to_regclass(p_name) IS NOT NULL THEN RETURN p_name; END IF;
      -- Two writers of the same new month: one makes it, the other finds it made.
      PERFORM pg_advisory_xact_lock(${PARTITION_LOCK});
      IF to_regclass(p_name) IS NOT NULL THEN RETURN p_name; END IF;
      EXECUTE format('CREATE TABLE %I PARTITION OF usage FOR VALUES FROM (%L) TO (%L)${withOptions}',
        p_name, p_month, to_char(to_date(p_month, 'YYYY-MM') + interval '1 month', 'YYYY-MM'));
      RETURN p_name;
    END
    $fn$;
`;

/** A month's partition is vacuumed once this share of its rows is new (migration 9). */
const VACUUM_INSERT_SCALE = 0.01;

export const LEDGER_PG_MIGRATION = {
  version: 8,
  sql: `
    LOCK TABLE usage IN ACCESS EXCLUSIVE MODE;
    DROP TRIGGER IF EXISTS usage_tally ON usage;
    DROP FUNCTION IF EXISTS tintype_usage_tally();
    ALTER TABLE usage RENAME TO usage_unpartitioned;
    CREATE TABLE usage (
      seq BIGINT NOT NULL DEFAULT nextval('usage_seq_seq'),
      lease_id TEXT NOT NULL,
      key_id TEXT NOT NULL,
      operation TEXT NOT NULL,
      month TEXT NOT NULL,
      status INTEGER,
      error TEXT,
      cache TEXT,
      metered BOOLEAN NOT NULL,
      outcome TEXT NOT NULL,
      checked_at BIGINT NOT NULL,
      recorded_at BIGINT NOT NULL,
      UNIQUE (lease_id, month)
    ) PARTITION BY RANGE (month);
    ALTER SEQUENCE usage_seq_seq OWNED BY usage.seq;
    -- A key's month is one partition (pruned by month) and one range of this index in it.
    CREATE INDEX usage_key ON usage (key_id);

${partitionFunction('')}

    CREATE OR REPLACE FUNCTION tintype_ledger_drop_before(p_month TEXT) RETURNS TEXT[]
    LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $fn$
    DECLARE
      p_name TEXT;
      dropped TEXT[] := '{}';
    BEGIN
      PERFORM pg_advisory_xact_lock(${PARTITION_LOCK});
      FOR p_name IN
        SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = 'usage'::regclass AND c.relname ~ '^usage_[0-9]{4}_[0-9]{2}$'
          AND replace(substr(c.relname, 7), '_', '-') < p_month
        ORDER BY c.relname
      LOOP
        EXECUTE format('DROP TABLE %I', p_name);
        dropped := dropped || replace(substr(p_name, 7), '_', '-');
      END LOOP;
      RETURN dropped;
    END
    $fn$;

    CREATE OR REPLACE FUNCTION tintype_ledger_insert(
      p_lease TEXT[], p_key TEXT[], p_op TEXT[], p_month TEXT[], p_status INTEGER[], p_error TEXT[],
      p_cache TEXT[], p_metered BOOLEAN[], p_outcome TEXT[], p_checked BIGINT[], p_recorded BIGINT[])
    RETURNS INTEGER LANGUAGE plpgsql AS $fn$
    DECLARE
      m TEXT;
      n INTEGER;
    BEGIN
      FOR m IN SELECT DISTINCT x FROM unnest(p_month) x LOOP
        PERFORM tintype_ledger_partition(m);
      END LOOP;
      -- Tally rows are taken in one order by every writer, so two batches never wait on each other in a cycle.
      WITH ins AS (
        INSERT INTO usage (lease_id, key_id, operation, month, status, error, cache, metered, outcome, checked_at, recorded_at)
          SELECT * FROM unnest(p_lease, p_key, p_op, p_month, p_status, p_error, p_cache, p_metered, p_outcome, p_checked, p_recorded)
          ON CONFLICT (lease_id, month) DO NOTHING
          RETURNING month, key_id, operation, status, error, cache, metered, outcome
      ), counted AS (
        INSERT INTO usage_tally (month, key_id, operation, status, error, cache, metered, outcome, n)
          SELECT month, key_id, operation, status, error, cache, metered, outcome, count(*) FROM ins
          GROUP BY month, key_id, operation, status, error, cache, metered, outcome
          ORDER BY month, key_id, operation, status, error, cache, metered, outcome
          ON CONFLICT (month, key_id, operation, (coalesce(status, 0)), (coalesce(error, '')), (coalesce(cache, '')), metered, outcome)
          DO UPDATE SET n = usage_tally.n + excluded.n
          RETURNING 1
      )
      SELECT count(*) INTO n FROM ins;
      RETURN n;
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
      PERFORM tintype_ledger_insert(ARRAY[l.id], ARRAY[l.key_id], ARRAY[l.operation], ARRAY[l.month], ARRAY[p_status],
        ARRAY[p_error], ARRAY[p_cache], ARRAY[p_metered], ARRAY[p_outcome], ARRAY[l.created_at], ARRAY[p_now]);
    END
    $fn$;

    SELECT tintype_ledger_partition(month) FROM (SELECT DISTINCT month FROM usage_unpartitioned) m;
    INSERT INTO usage (seq, lease_id, key_id, operation, month, status, error, cache, metered, outcome, checked_at, recorded_at)
      SELECT seq, lease_id, key_id, operation, month, status, error, cache, metered, outcome, checked_at, recorded_at
      FROM usage_unpartitioned;
    DROP TABLE usage_unpartitioned;
    ANALYZE usage;
  `,
};

/**
 * Migration 9: a key's records read from the index alone (docs/operations.md "Reading usage").
 * The ledger is written in time order, so a key's records of a month lie on as many heap pages
 * as it has records; once the ledger outgrows memory each is a random read. `usage_key_read`
 * (key, then settle order) holds every column a read returns, so a key's month is a few
 * adjacent index pages in an index-only scan, in the order `usage` lists them. It replaces
 * `usage_key` (one index per row written, as before, wider). An index-only scan skips the heap
 * only for pages VACUUM has marked all-visible: each month's partition is vacuumed by autovacuum
 * once 1% of its rows are new (autovacuum_vacuum_insert_scale_factor; 20% by default), so at
 * most about 1% of a live month's records are read from the heap. Partitions made later get the
 * same setting (tintype_ledger_partition).
 */
export const LEDGER_READ_PG_MIGRATION = {
  version: 9,
  sql: `
    CREATE INDEX usage_key_read ON usage (key_id, seq)
      INCLUDE (lease_id, operation, month, status, error, cache, metered, outcome, checked_at, recorded_at);
    DROP INDEX usage_key;

${partitionFunction(` WITH (autovacuum_vacuum_insert_scale_factor = ${VACUUM_INSERT_SCALE})`)}

    DO $do$
    DECLARE
      p_name TEXT;
    BEGIN
      FOR p_name IN SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'usage'::regclass LOOP
        EXECUTE format('ALTER TABLE %I SET (autovacuum_vacuum_insert_scale_factor = ${VACUUM_INSERT_SCALE})', p_name);
      END LOOP;
    END
    $do$;
  `,
};
