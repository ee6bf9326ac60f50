/**
 * The SQLite backend (better-sqlite3) for `tintype start` and single-process `tintype policy`.
 * better-sqlite3 is synchronous, so each reservation and settle runs whole inside one transaction
 * that no other request can interleave with: exact under any number of parallel checks in this
 * process. Those arriving in one event-loop turn share one transaction (groupCommit below).
 *
 * Durability: WAL mode. A settle is answered only after its transaction committed, i.e. after
 * its WAL frames were handed to the kernel with write(); a killed process (kill -9) loses
 * nothing the kernel holds. `synchronous=normal` (default) fsyncs at checkpoints only, so an
 * OS crash or power loss can roll back the last commits; `full` fsyncs every commit.
 */
import Database, { type SqliteDatabase } from './sqlite-driver.ts';
import path from 'node:path';
import { ensurePrivateDir, ensurePrivateFile, narrowIfPresent } from '../../lib/private-files.ts';
import { type Checkpointer, startCheckpointer } from './sqlite-checkpointer.ts';
import { SQLITE_MIGRATIONS } from './sqlite-schema.ts';
import { sqliteEgress } from './egress-sqlite.ts';
import type { ClaimResult } from '../../lib/policy-contract.ts';
import {
  CLOSED_LEASE_MEMORY_MS,
  STORE_BUDGET_MS,
  type CheckRequest,
  type CheckResult,
  type ClaimedLease,
  type KeyRecord,
  type Limits,
  type PolicyStore,
  type ReserveOutcome,
  type SettleOutcome,
  type SettleResult,
  type UsageRecord,
} from './store.ts';

/**
 * Page size of a new database file. Rows here are small; every page a commit touches is written
 * whole to the WAL, so small pages cut the bytes written per check and settle about fourfold.
 * An existing file keeps the page size it was created with.
 */
const NEW_DATABASE_PAGE_SIZE = 1024;

export interface SqliteStoreOptions {
  /** Directory of the database file (TINTYPE_DATA_DIR), or `:memory:`. */
  dataDir: string;
  synchronous?: 'normal' | 'full';
  /** How long a write waits for another process's lock before failing (and the check failing closed); STORE_BUDGET_MS by default. */
  busyTimeoutMs?: number;
  /** Checkpoint the WAL from a worker thread (sqlite-checkpointer.ts); off for short-lived admin commands. */
  backgroundCheckpoints?: boolean;
}

/** WAL pages after which a commit checkpoints by itself: only a backstop when the worker falls behind. */
const AUTOCHECKPOINT_BACKSTOP_PAGES = 10_000;

interface LeaseRow {
  id: string;
  key_id: string;
  operation: string;
  render: number;
  month: string;
  created_at: number;
}

/** Opens (creating if needed) `policy.sqlite` in the data directory. */
export function openSqliteStore(options: SqliteStoreOptions): PolicyStore {
  let file = ':memory:';
  if (options.dataDir !== ':memory:') {
    ensurePrivateDir(options.dataDir);
    file = path.join(options.dataDir, 'policy.sqlite');
    // SQLite gives the -wal and -shm files it creates the database file's mode, so a 0600
    // database keeps its companions 0600 too; ones left by an older version are narrowed.
    ensurePrivateFile(file);
    for (const companion of ['-wal', '-shm', '-journal']) narrowIfPresent(file + companion);
  }
  const db = new Database(file);
  db.pragma(`page_size = ${NEW_DATABASE_PAGE_SIZE}`);
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${options.synchronous === 'full' ? 'FULL' : 'NORMAL'}`);
  db.pragma(`busy_timeout = ${options.busyTimeoutMs ?? STORE_BUDGET_MS}`);
  db.pragma('foreign_keys = ON');
  let checkpointer: Checkpointer | undefined;
  if (file !== ':memory:' && options.backgroundCheckpoints !== false) {
    db.pragma(`wal_autocheckpoint = ${AUTOCHECKPOINT_BACKSTOP_PAGES}`);
    db.pragma(`journal_size_limit = ${64 * 2 ** 20}`);
    checkpointer = startCheckpointer(file);
  }
  db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)');

  // Statements are prepared lazily: the tables exist only after migrate().
  let s: ReturnType<typeof prepare> | undefined;
  const st = (): ReturnType<typeof prepare> => (s ??= prepare(db));

  const reserve = ({ keyId, limits, r }: { keyId: string; limits: Limits; r: CheckRequest }): { outcome: ReserveOutcome; windowCount: number } => {
    const q = st();
    q.ensureState.run(keyId, r.windowStart);
    const state = q.getState.get(keyId) as { window_start: number; window_count: number; in_flight: number };
    let count = state.window_start === r.windowStart ? state.window_count : 0;
    // A full window refuses without writing: counting the refusal would change nothing a client sees.
    if (count >= limits.perMinute) return { outcome: 'rate_limited', windowCount: count };
    count += 1;
    q.setWindow.run(r.windowStart, count, keyId);
    const used = (q.getMonth.get(keyId, r.month) as { used: number } | undefined)?.used ?? 0;
    if (used >= limits.monthlyQuota) return { outcome: 'quota_exceeded', windowCount: count };
    if (r.render && state.in_flight >= limits.concurrentRenders) return { outcome: 'concurrent_limit', windowCount: count };
    q.bumpMonth.run(keyId, r.month);
    if (r.render) q.addInFlight.run(1, keyId);
    q.insertLease.run(r.leaseId, keyId, r.operation, r.render ? 1 : 0, r.month, r.now, r.expiresAt);
    return { outcome: 'granted', windowCount: count };
  };

  /**
   * Closes a lease: places freed, reservation returned when not metered, and either its usage
   * record or, for an outcome that writes none, a note that it was closed.
   */
  const close = (lease: LeaseRow, o: Omit<UsageRecord, 'leaseId' | 'keyId' | 'operation' | 'month' | 'checkedAt'>, recorded = true): void => {
    const q = st();
    q.deleteLease.run(lease.id);
    if (lease.render) q.addInFlight.run(-1, lease.key_id);
    if (!o.metered) q.dropMonth.run(lease.key_id, lease.month);
    if (!recorded) {
      q.insertClosed.run(lease.id, o.recordedAt);
      return;
    }
    q.insertUsage.run(lease.id, lease.key_id, lease.operation, lease.month, o.status, o.error, o.cache,
      o.metered ? 1 : 0, o.outcome, lease.created_at, o.recordedAt);
  };

  const settleOne = (o: SettleOutcome): SettleResult => {
    const q = st();
    const lease = q.getLease.get(o.leaseId) as LeaseRow | undefined;
    if (lease === undefined) {
      return q.hasUsage.get(o.leaseId) === undefined && q.hasClosed.get(o.leaseId) === undefined ? 'unknown' : 'already';
    }
    // Only a recorded outcome can be metered: an unrecorded one must give its reservation back.
    const metered = o.metered && o.recorded;
    close(lease, { status: o.status, error: o.error, cache: o.cache, metered, outcome: 'settled', recordedAt: o.now }, o.recorded);
    return 'settled';
  };
  const claimOne = (l: ClaimedLease): ClaimResult => {
    const q = st();
    if (q.claimLease.run(l.id, l.keyId, l.operation).changes === 1) return 'claimed';
    return q.findLease.get(l.id, l.keyId, l.operation) === undefined ? 'spent' : 'held';
  };
  const reserveInGroup = groupCommit(db, reserve);
  const claimInGroup = groupCommit(db, claimOne);
  const settleInGroup = groupCommit(db, settleOne);

  const expireTx = db.transaction((now: number): number => {
    const q = st();
    q.forgetClosed.run(now - CLOSED_LEASE_MEMORY_MS);
    const due = q.dueLeases.all(now) as LeaseRow[];
    for (const lease of due) {
      close(lease, { status: null, error: null, cache: null, metered: false, outcome: 'unsettled', recordedAt: now });
    }
    return due.length;
  });

  const probeTx = db.transaction(() => undefined);

  const migrateTx = db.transaction(() => {
    const done = new Set((db.prepare('SELECT version FROM schema_migrations').all() as Array<{ version: number }>).map((r) => r.version));
    for (const m of SQLITE_MIGRATIONS) {
      if (done.has(m.version)) continue;
      db.exec(m.sql);
      db.prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)').run(m.version, Date.now());
    }
  });

  return {
    kind: 'sqlite',
    egress: sqliteEgress(db),
    async migrate() {
      migrateTx.immediate();
    },
    async pendingMigrations() {
      const done = new Set((db.prepare('SELECT version FROM schema_migrations').all() as Array<{ version: number }>).map((r) => r.version));
      return SQLITE_MIGRATIONS.map((m) => m.version).filter((v) => !done.has(v));
    },
    async findKey(hash) {
      const row = st().findKey.get(hash) as KeyRow | undefined;
      return row === undefined ? undefined : keyFromRow(row);
    },
    async createKey(k) {
      st().insertKey.run(k.id, k.hash, k.name, k.plan, k.createdAt, k.revokedAt);
    },
    async listKeys() {
      return (st().listKeys.all() as KeyRow[]).map(keyFromRow);
    },
    async revokeKey(id, now) {
      return st().revokeKey.run(now, id).changes === 1;
    },
    async check(r): Promise<CheckResult> {
      // A revocation that commits between the lookup and the reservation is one that came just after this check.
      const key = st().findKey.get(r.hash) as KeyRow | undefined;
      if (key === undefined || key.revoked_at !== null) return { outcome: 'unauthorized' };
      const limits = Object.hasOwn(r.plans, key.plan) ? r.plans[key.plan] : undefined;
      if (limits === undefined) return { outcome: 'no_plan', keyId: key.id, plan: key.plan };
      return { keyId: key.id, limits, ...(await reserveInGroup.run({ keyId: key.id, limits, r })) };
    },
    async claim(lease) {
      return claimInGroup.run(lease);
    },
    async release(lease) {
      st().releaseLease.run(lease.id, lease.keyId, lease.operation);
    },
    async settle(o) {
      return settleInGroup.run(o);
    },
    async expire(now) {
      return expireTx.immediate(now);
    },
    async monthUsed(keyId, month) {
      return (st().getMonth.get(keyId, month) as { used: number } | undefined)?.used ?? 0;
    },
    async inFlight(keyId) {
      return (st().getState.get(keyId) as { in_flight: number } | undefined)?.in_flight ?? 0;
    },
    async openLeases(keyId) {
      return (st().countLeases.get(keyId) as { n: number }).n;
    },
    async usage(keyId) {
      return (st().usageOf.all(keyId) as UsageRow[]).map(usageFromRow);
    },
    async ping() {
      // Readiness means a check could write now: take the write lock and let it go.
      probeTx.immediate();
    },
    async close() {
      reserveInGroup.flush();
      claimInGroup.flush();
      settleInGroup.flush();
      await checkpointer?.stop();
      if (db.open) db.close();
    },
  };
}

/**
 * Group commit: the reservations (or settles) that arrive in one turn of the event loop run in
 * one IMMEDIATE transaction, in arrival order, each exactly as it would alone; each caller is
 * answered only once that transaction committed. Under load most of a commit's cost (writing
 * the WAL frames of the pages it touched) is then shared: the key's state, month and index
 * pages are written once for the group. A group that fails for another reason than a lock
 * wait runs again one item per transaction, so one bad item fails alone; a lock wait that ran
 * out (STORE_BUDGET_MS) fails the whole group at once, within the same budget.
 */
export function groupCommit<I, O>(db: SqliteDatabase, one: (item: I) => O): { run(item: I): Promise<O>; flush(): void } {
  let queue: Array<{ item: I; resolve: (o: O) => void; reject: (err: unknown) => void }> = [];
  const all = db.transaction((items: typeof queue) => items.map((p) => one(p.item)));
  const single = db.transaction(one);
  const flush = (): void => {
    const group = queue;
    queue = [];
    if (group.length === 0) return;
    let out: O[];
    try {
      out = all.immediate(group);
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      if (group.length === 1 || code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED' || !db.open) {
        for (const p of group) p.reject(err);
        return;
      }
      for (const p of group) {
        try {
          p.resolve(single.immediate(p.item));
        } catch (e) {
          p.reject(e);
        }
      }
      return;
    }
    group.forEach((p, i) => p.resolve(out[i]!));
  };
  return {
    run(item) {
      return new Promise<O>((resolve, reject) => {
        // After the I/O callbacks of this turn: every request read in it joins the group.
        if (queue.length === 0) setImmediate(flush);
        queue.push({ item, resolve, reject });
      });
    },
    flush,
  };
}

function prepare(db: SqliteDatabase) {
  return {
    findKey: db.prepare('SELECT id, name, plan, created_at, revoked_at FROM api_keys WHERE hash = ?'),
    insertKey: db.prepare('INSERT INTO api_keys (id, hash, name, plan, created_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?)'),
    listKeys: db.prepare('SELECT id, name, plan, created_at, revoked_at FROM api_keys ORDER BY created_at, id'),
    revokeKey: db.prepare('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL'),
    ensureState: db.prepare('INSERT INTO key_state (key_id, window_start, window_count, in_flight) VALUES (?, ?, 0, 0) ON CONFLICT DO NOTHING'),
    getState: db.prepare('SELECT window_start, window_count, in_flight FROM key_state WHERE key_id = ?'),
    setWindow: db.prepare('UPDATE key_state SET window_start = ?, window_count = ? WHERE key_id = ?'),
    addInFlight: db.prepare('UPDATE key_state SET in_flight = in_flight + ? WHERE key_id = ?'),
    getMonth: db.prepare('SELECT used FROM usage_months WHERE key_id = ? AND month = ?'),
    bumpMonth: db.prepare('INSERT INTO usage_months (key_id, month, used) VALUES (?, ?, 1) ON CONFLICT (key_id, month) DO UPDATE SET used = used + 1'),
    dropMonth: db.prepare('UPDATE usage_months SET used = used - 1 WHERE key_id = ? AND month = ?'),
    insertLease: db.prepare('INSERT INTO leases (id, key_id, operation, render, month, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)'),
    getLease: db.prepare('SELECT id, key_id, operation, render, month, created_at FROM leases WHERE id = ?'),
    claimLease: db.prepare('UPDATE leases SET claimed = 1 WHERE id = ? AND key_id = ? AND operation = ? AND claimed = 0'),
    findLease: db.prepare('SELECT 1 FROM leases WHERE id = ? AND key_id = ? AND operation = ?'),
    releaseLease: db.prepare('UPDATE leases SET claimed = 0 WHERE id = ? AND key_id = ? AND operation = ?'),
    countLeases: db.prepare('SELECT count(*) AS n FROM leases WHERE key_id = ?'),
    deleteLease: db.prepare('DELETE FROM leases WHERE id = ?'),
    dueLeases: db.prepare('SELECT id, key_id, operation, render, month, created_at FROM leases WHERE expires_at <= ? ORDER BY expires_at LIMIT 1000'),
    hasUsage: db.prepare('SELECT 1 FROM usage WHERE lease_id = ?'),
    hasClosed: db.prepare('SELECT 1 FROM closed_leases WHERE lease_id = ?'),
    insertClosed: db.prepare('INSERT INTO closed_leases (lease_id, closed_at) VALUES (?, ?)'),
    // Bounded, like the lease sweep: one sweep never holds the write lock for long.
    forgetClosed: db.prepare('DELETE FROM closed_leases WHERE lease_id IN (SELECT lease_id FROM closed_leases WHERE closed_at <= ? LIMIT 1000)'),
    insertUsage: db.prepare(`INSERT INTO usage (lease_id, key_id, operation, month, status, error, cache, metered, outcome, checked_at, recorded_at)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
    usageOf: db.prepare('SELECT * FROM usage WHERE key_id = ? ORDER BY seq'),
  };
}

interface KeyRow {
  id: string;
  name: string;
  plan: string;
  created_at: number;
  revoked_at: number | null;
}

function keyFromRow(r: KeyRow): KeyRecord {
  return { id: r.id, name: r.name, plan: r.plan, createdAt: r.created_at, revokedAt: r.revoked_at };
}

interface UsageRow {
  lease_id: string;
  key_id: string;
  operation: string;
  month: string;
  status: number | null;
  error: string | null;
  cache: string | null;
  metered: number;
  outcome: 'settled' | 'unsettled';
  checked_at: number;
  recorded_at: number;
}

function usageFromRow(r: UsageRow): UsageRecord {
  return {
    leaseId: r.lease_id, keyId: r.key_id, operation: r.operation, month: r.month, status: r.status,
    error: r.error, cache: r.cache, metered: r.metered === 1, outcome: r.outcome,
    checkedAt: r.checked_at, recordedAt: r.recorded_at,
  };
}
