/**
 * The counters store (docs/architecture.md §2 "The counters store"; docs/operations.md "Stores"),
 * selected by DATABASE_URL with TINTYPE_COUNTERS_URL: burst windows, monthly reservations,
 * render places and leases in Redis, each decision one script call (scripts.ts) in one round
 * trip; keys, plans, egress lists and the ledger in PostgreSQL (the PostgreSQL store, delegated
 * to). Keys are answered from memory (key-cache.ts), refusals that cannot change too
 * (refusals.ts). Every closed lease with a record is one event on the ledger stream, appended
 * after the close; a repeated settle appends it again.
 */
import type { Result } from 'ioredis';
import pg from 'pg';
import type { ClaimResult } from '../../../lib/policy-contract.ts';
import { openPostgresStore } from '../postgres.ts';
import {
  STORE_BUDGET_MS,
  type CheckRequest,
  type CheckResult,
  type Limits,
  type PolicyStore,
  type ReserveOutcome,
  type SettleResult,
} from '../store.ts';
import { keyCache } from './key-cache.ts';
import { refusals } from './refusals.ts';
import { CHECK_LUA, CLAIM_LUA, EXPIRE_LUA, RESCHEDULE_LUA, SCHEDULE_LUA, SETTLE_LUA } from './scripts.ts';
import { LEDGER_STREAM } from '../../ledger/event.ts';
import { startLedgerSink } from '../../ledger/sink.ts';
import { ledgerWritten } from '../../ledger/written.ts';
import { createLogger, type Logger } from '../../../lib/log.ts';
import { connectRedis } from '../../../lib/redis-connect.ts';

/** Moves whenever a key is made or revoked (key-cache.ts). */
export const KEY_GENERATION = 'tintype:keys:generation';
/**
 * Moves whenever a key's egress policy changes (with PostgreSQL's own egress_generation): the
 * replicas ask Redis, not PostgreSQL, whether to read the lists again (policy/egress.ts), so a
 * check does not need PostgreSQL while it is away.
 */
export const EGRESS_GENERATION = 'tintype:egress:generation';
/** Key id ▸ when its leases next need a sweep (scripts.ts SCHEDULE_LUA). */
export const EXPIRY_SCHEDULE = 'tintype:expiry';
/** A month's counter is kept this long after its month ends (then seeded again if ever asked). */
export const MONTH_KEEP_MS = 35 * 24 * 60 * 60 * 1000;
/** How long a store with no sink of its own waits for the replicas' sinks before it reads the ledger. */
const LEDGER_WAIT_MS = 10_000;
/**
 * How long a closed lease is remembered (its record kept, so a repeated settle answers `already`
 * and appends its ledger event again): the renderer's settle retries span about 26 s after its
 * first attempt (renderer/server/index.ts SETTLE_RETRY_MS waits, 7.7 s, and six attempts of
 * lib/policy-poster.ts POLICY_CALL_TIMEOUT_MS, 3 s); a lease its expiry closed had that first
 * attempt before its grace ran out, so its retries end sooner after the close. Twice the span
 * covers clocks a fraction of a second apart. Not the other stores' day: here each closed lease
 * is memory (docs/operations.md "Stores": about 0.4 KB a record, 250 MB at 10,000 calls/s, about
 * 440 MB with the leases' indexes; `npm run bench -- closed-leases`).
 */
export const REDIS_CLOSED_LEASE_MEMORY_MS = 60_000;
/** Keys swept per pass of expire(). */
const SWEEP_KEYS = 500;

/** Everything of one key, under one hash tag: one Redis Cluster slot. */
export const keyPrefix = (keyId: string): string => `tintype:{k:${keyId}}:`;
/** Which key a lease was granted under, for a settle that does not say (the lease's own slot). */
const leaseIndex = (leaseId: string): string => `tintype:lease:${leaseId}`;

export interface RedisStoreOptions {
  countersUrl: string;
  databaseUrl: string;
  poolSize: number;
  /** A short-lived command: no ledger sink in the background. */
  shortLived?: boolean;
  /** How long one Redis command may take before the call fails closed; STORE_BUDGET_MS - 500 by default. */
  commandTimeoutMs?: number;
  statementTimeoutMs?: number;
  acquireTimeoutMs?: number;
  /** Where the ledger sink says what it cannot write (it retries); quiet by default. */
  logger?: Logger;
}

declare module 'ioredis' {
  interface RedisCommander<Context> {
    tintypeCheck(key: string, ...args: Array<string | number>): Result<[string, number, number], Context>;
    tintypeClaim(key: string, ...args: Array<string | number>): Result<string, Context>;
    tintypeSettle(key: string, ...args: Array<string | number>): Result<[string, string], Context>;
    tintypeExpire(key: string, ...args: Array<string | number>): Result<string[], Context>;
    tintypeSchedule(key: string, ...args: Array<string | number>): Result<number, Context>;
    tintypeReschedule(key: string, ...args: Array<string | number>): Result<number, Context>;
  }
}

/** A pipeline's answers, or its first error thrown. */
function answers(results: Array<[Error | null, unknown]> | null): unknown[] {
  if (results === null) throw new Error('redis pipeline answered nothing');
  for (const [err] of results) if (err !== null) throw err;
  return results.map(([, v]) => v);
}

/** Until the month's counter is dropped: MONTH_KEEP_MS after the month ends. */
function monthKeepMs(month: string, now: number): number {
  const [y, m] = month.split('-').map(Number) as [number, number];
  return Math.max(1, Date.UTC(y, m, 1) + MONTH_KEEP_MS - now);
}

export function openRedisStore(o: RedisStoreOptions): PolicyStore {
  const postgres = openPostgresStore({ url: o.databaseUrl, poolSize: o.poolSize, statementTimeoutMs: o.statementTimeoutMs, acquireTimeoutMs: o.acquireTimeoutMs });
  // Seeds of months: off the checks' pool.
  const pool = new pg.Pool({ connectionString: o.databaseUrl, max: 2, idleTimeoutMillis: 30_000 });
  pool.on('error', () => {});
  const redis = connectRedis(o.countersUrl, {
    lazyConnect: false,
    maxRetriesPerRequest: 1,
    commandTimeout: o.commandTimeoutMs ?? STORE_BUDGET_MS - 500,
    // A call is not resent after a reconnect: its deadline may have passed, and a settle answered twice is answered `already`.
    autoResendUnfulfilledCommands: false,
    // Calls made while the connection's last batch is out go together in the next one: one
    // write and one read for many calls, on either side (docs/performance.md "Scaling out").
    enableAutoPipelining: true,
  });
  // Trouble is reported by the calls that fail (503 busy); the events alone must not throw.
  redis.on('error', () => {});
  redis.defineCommand('tintypeCheck', { numberOfKeys: 1, lua: CHECK_LUA });
  redis.defineCommand('tintypeClaim', { numberOfKeys: 1, lua: CLAIM_LUA });
  redis.defineCommand('tintypeSettle', { numberOfKeys: 1, lua: SETTLE_LUA });
  redis.defineCommand('tintypeExpire', { numberOfKeys: 1, lua: EXPIRE_LUA });
  redis.defineCommand('tintypeSchedule', { numberOfKeys: 1, lua: SCHEDULE_LUA });
  redis.defineCommand('tintypeReschedule', { numberOfKeys: 1, lua: RESCHEDULE_LUA });

  const keys = keyCache({
    lookup: (hash) => postgres.findKey(hash),
    generation: async () => (await redis.get(KEY_GENERATION)) ?? '0',
  });
  const refused = refusals();
  // This replica's share of writing the ledger stream to PostgreSQL (policy/ledger/sink.ts); a
  // short-lived command writes none.
  const sink = o.shortLived ? undefined : startLedgerSink({
    redisUrl: o.countersUrl, databaseUrl: o.databaseUrl, logger: o.logger ?? createLogger('policy', { level: 'error' }),
  });
  let closed = false;

  /**
   * A month's calls as the ledger has them (metered records), the seed of a counter that Redis
   * does not hold (a new month, or a Redis that lost it). Reservations in flight are not in it:
   * their leases were in that Redis too.
   */
  const seedOfMonth = async (keyId: string, month: string): Promise<number> => {
    const r = await pool.query('SELECT coalesce(sum(n), 0) AS used FROM usage_tally WHERE key_id = $1 AND month = $2 AND metered', [keyId, month]);
    return Number(r.rows[0]?.used ?? 0);
  };

  /**
   * One round trip: the key's decision, the expiry schedule, and the lease's key for a settle
   * that does not name it, sent together (with whatever other calls the connection has queued).
   */
  const decide = async (keyId: string, r: CheckRequest, l: Readonly<Limits>, seed: string, until: number) => {
    const p = keyPrefix(keyId);
    // Three keys in three slots, sent at once (one round trip; to up to three nodes in a Cluster,
    // whose pipelines stay on one node) with whatever else the connection has queued.
    const [d] = await Promise.all([
      redis.tintypeCheck(`${p}s`, p, r.leaseId, r.operation, r.render ? 1 : 0, r.now, r.windowStart, r.month, r.expiresAt,
        l.perMinute, l.monthlyQuota, l.concurrentRenders, seed, monthKeepMs(r.month, r.now), until),
      redis.tintypeSchedule(EXPIRY_SCHEDULE, keyId, r.expiresAt, r.now),
      redis.set(leaseIndex(r.leaseId), keyId, 'PX', Math.max(1, r.expiresAt - r.now) + REDIS_CLOSED_LEASE_MEMORY_MS),
    ]);
    return d;
  };

  const commandTimeoutMs = o.commandTimeoutMs ?? STORE_BUDGET_MS - 500;
  /**
   * Runs one call with its deadline, the wall-clock time after which a decision reaching Redis
   * must not be taken (scripts.ts LATE), and fails it then even if Redis has not answered: a call
   * may wait behind the connection's batch in flight before it is sent, and the command timeout
   * counts only from the send.
   */
  const inTime = <T>(call: (until: number) => Promise<T>): Promise<T> => {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('redis did not answer within the budget')), commandTimeoutMs);
    });
    return Promise.race([call(Date.now() + commandTimeoutMs), late]).finally(() => clearTimeout(timer));
  };
  const notLate = <T>(answer: T): T => {
    if (answer === 'late' || (Array.isArray(answer) && answer[0] === 'late')) throw new Error('redis answered after the call gave up');
    return answer;
  };

  const bumpKeys = async (): Promise<void> => {
    keys.forget();
    await redis.incr(KEY_GENERATION);
  };

  return {
    kind: 'redis',
    egress: {
      ...postgres.egress,
      async setPolicy(keyId, policy, now) {
        const done = await postgres.egress.setPolicy(keyId, policy, now);
        await redis.incr(EGRESS_GENERATION);
        return done;
      },
      generation: async () => Number((await redis.get(EGRESS_GENERATION)) ?? 0),
      async policies() {
        // The generation first: a change landing between the two reads is read again at the next poll.
        const generation = Number((await redis.get(EGRESS_GENERATION)) ?? 0);
        return { ...(await postgres.egress.policies()), generation };
      },
    },
    migrate: (options) => postgres.migrate(options),
    pendingMigrations: () => postgres.pendingMigrations(),
    findKey: (hash) => postgres.findKey(hash),
    async createKey(k) {
      await postgres.createKey(k);
      await bumpKeys();
    },
    listKeys: () => postgres.listKeys(),
    async revokeKey(id, now) {
      const done = await postgres.revokeKey(id, now);
      // Moved even when it was revoked already: a revocation whose move failed is repeated by its operator.
      await bumpKeys();
      return done;
    },
    async check(r): Promise<CheckResult> {
      await keys.fresh();
      const k = await keys.find(r.hash);
      if (k === undefined || k.revokedAt !== null) return { outcome: 'unauthorized' };
      const limits = r.plans[k.plan];
      if (limits === undefined) return { outcome: 'no_plan', keyId: k.id, plan: k.plan };
      const known = refused.of(k.id, r, limits);
      if (known !== undefined) return known;
      let d = notLate(await inTime((until) => decide(k.id, r, limits, '', until)));
      if (d[0] === 'seed') {
        const seed = String(await seedOfMonth(k.id, r.month));
        d = notLate(await inTime((until) => decide(k.id, r, limits, seed, until)));
      }
      const result: CheckResult = { outcome: d[0] as ReserveOutcome, keyId: k.id, limits, windowCount: Number(d[1]) };
      refused.note(k.id, r, result, Number(d[2]));
      return result;
    },
    async claim(l) {
      const p = keyPrefix(l.keyId);
      return notLate(await inTime((until) => redis.tintypeClaim(`${p}s`, p, l.id, l.operation, 1, until))) as ClaimResult;
    },
    async release(l) {
      const p = keyPrefix(l.keyId);
      notLate(await inTime((until) => redis.tintypeClaim(`${p}s`, p, l.id, l.operation, 0, until)));
    },
    async settle(s) {
      const keyId = s.keyId ?? (await inTime(() => redis.get(leaseIndex(s.leaseId))));
      if (keyId === null) return 'unknown';
      const p = keyPrefix(keyId);
      const [result, event] = notLate(await inTime((until) => redis.tintypeSettle(`${p}s`, p, keyId, s.leaseId, s.status ?? '', s.error ?? '', s.cache ?? '',
        s.metered && s.recorded ? 1 : 0, s.recorded ? 1 : 0, s.now, REDIS_CLOSED_LEASE_MEMORY_MS, until)));
      // After the close, not inside it (another slot). Lost with a replica killed in between,
      // it is appended again by the renderer's retry, which answers `already`.
      if (event !== '') await inTime(() => redis.xadd(LEDGER_STREAM, '*', 'e', event));
      return result as SettleResult;
    },
    async expire(now) {
      const due = await redis.zrangebyscore(EXPIRY_SCHEDULE, '-inf', now, 'WITHSCORES', 'LIMIT', 0, SWEEP_KEYS);
      let n = 0;
      for (let i = 0; i + 1 < due.length; i += 2) {
        const keyId = due[i]!;
        const p = keyPrefix(keyId);
        const [next, ...events] = await redis.tintypeExpire(`${p}s`, p, keyId, now, REDIS_CLOSED_LEASE_MEMORY_MS);
        // The stream and the schedule are two slots (two nodes of a Cluster): the events first,
        // then the schedule, as one pipeline each.
        if (events.length > 0) {
          const append = redis.pipeline();
          for (const e of events) append.xadd(LEDGER_STREAM, '*', 'e', e);
          answers(await append.exec());
        }
        await redis.tintypeReschedule(EXPIRY_SCHEDULE, keyId, due[i + 1]!, next ?? '');
        n += events.length;
      }
      return n;
    },
    async monthUsed(keyId, month) {
      const held = await redis.get(`${keyPrefix(keyId)}m:${month}`);
      return held === null ? seedOfMonth(keyId, month) : Number(held);
    },
    async inFlight(keyId) {
      return Number((await redis.hget(`${keyPrefix(keyId)}s`, 'if')) ?? 0);
    },
    async openLeases(keyId) {
      return redis.hlen(`${keyPrefix(keyId)}l`);
    },
    async usage(keyId) {
      // The ledger as of now: every event appended so far is written first (by this replica's
      // sink or any other's; a dead replica's share once taken over).
      if (sink !== undefined) await sink.drained();
      else await ledgerWritten(redis, LEDGER_WAIT_MS);
      return postgres.usage(keyId);
    },
    async ping() {
      await redis.ping();
    },
    async close() {
      if (closed) return;
      closed = true;
      keys.stop();
      await sink?.stop();
      redis.disconnect();
      await pool.end();
      await postgres.close();
    },
  };
}
