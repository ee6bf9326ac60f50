/**
 * What policy keeps, behind one interface with three backends: SQLite (embedded, one process),
 * PostgreSQL (shared by replicas), and Redis counters beside PostgreSQL (redis/store.ts, shared
 * by replicas at scale). All must give the same answers; one test suite runs against each. Every method may throw when the store cannot answer: callers fail closed.
 */
import type { ClaimResult, Operation } from '../../lib/policy-contract.ts';
import type { EgressStore } from './egress-store.ts';

/**
 * The longest a check may spend in the store before it fails closed (503 busy), lock waits
 * included. It must stay under the edge's ext_authz timeout (the chart's Envoy config, charts/tintype/files/envoy.yaml, 2 s): a
 * reservation that committed after Envoy gave up would hold the key's render place, unsettled,
 * until its lease expired. PostgreSQL splits it (postgres.ts PG_TIMEOUTS); SQLite waits on
 * another process's lock for at most this long.
 */
export const STORE_BUDGET_MS = 1_500;

/** A key as stored: never the secret, only its hash. */
/** What a claim names of a lease: its id, key and operation, as its signature says. */
export interface ClaimedLease {
  id: string;
  keyId: string;
  operation: string;
}

export interface KeyRecord {
  id: string;
  name: string;
  plan: string;
  createdAt: number;
  revokedAt: number | null;
}

/** The limits applied to one reservation. */
export interface Limits {
  perMinute: number;
  monthlyQuota: number;
  concurrentRenders: number;
}

/** One check: find the key by its hash, then reserve a call (and a render place) or say why not. */
export interface CheckRequest {
  /** Hash of the presented secret (secrets.ts lookupHash): every request looks one up. */
  hash: string;
  leaseId: string;
  operation: Operation;
  /** Whether the operation holds a concurrency place (render operations; ping does not). */
  render: boolean;
  now: number;
  /** Start of the burst window holding `now`. */
  windowStart: number;
  /** `YYYY-MM` of `now`, UTC. */
  month: string;
  /** When the lease expires if never settled. */
  expiresAt: number;
  /** The plans in force; the key's plan gives the limits. */
  plans: Readonly<Record<string, Readonly<Limits>>>;
}

export type ReserveOutcome = 'granted' | 'rate_limited' | 'quota_exceeded' | 'concurrent_limit';

/**
 * `unauthorized`: no such key, or revoked (told apart nowhere). `no_plan`: the key's plan is not
 * in force (start-up refuses this; a plans file changed under a running store). Otherwise the
 * reservation's outcome for the key, with the limits it was held to.
 */
export type CheckResult =
  | { outcome: 'unauthorized' }
  | { outcome: 'no_plan'; keyId: string; plan: string }
  | { outcome: ReserveOutcome; keyId: string; limits: Limits; windowCount: number };

/** A lease's outcome as the renderer reported it. */
export interface SettleOutcome {
  leaseId: string;
  /** The key the signed lease names, when the caller has it: the counters store then finds the lease in one round trip. */
  keyId?: string;
  status: number;
  error: string | null;
  cache: 'hit' | 'miss' | null;
  metered: boolean;
  /**
   * Whether the outcome is written to the ledger. A 400 or a 503 is not (docs/architecture.md §6, spec Part 8
   * rule 4): the lease is closed, its places freed and its reservation returned, with no usage record.
   */
  recorded: boolean;
  now: number;
}

/**
 * How long a lease closed without a usage record (400, 503) is remembered, so that a repeated
 * settle of it still answers `already` (settle is idempotent) instead of `unknown`.
 */
export const CLOSED_LEASE_MEMORY_MS = 24 * 60 * 60 * 1000;

/** `settled`: closed now (recorded or not, as the outcome says); `already`: settled or expired before (idempotent); `unknown`: no such lease. */
export type SettleResult = 'settled' | 'already' | 'unknown';

/** One usage record of the ledger. */
export interface UsageRecord {
  leaseId: string;
  keyId: string;
  operation: string;
  month: string;
  status: number | null;
  error: string | null;
  cache: string | null;
  metered: boolean;
  /** `settled` by the renderer, or `unsettled` when the lease expired. */
  outcome: 'settled' | 'unsettled';
  checkedAt: number;
  recordedAt: number;
}

export interface PolicyStore {
  readonly kind: 'sqlite' | 'postgres' | 'redis';
  /** Keys' egress policies and the egress audit trail, in the same database (egress-store.ts). */
  readonly egress: EgressStore;
  /**
   * Applies the versioned migrations not yet applied; safe to run again and from several processes.
   * `timeoutMs`: how long one statement may run (default: 120 s, as at a policy start).
   */
  migrate(options?: { timeoutMs?: number }): Promise<void>;
  /** The versions of this code's migrations the store has not applied yet (all, on an empty store). */
  pendingMigrations(): Promise<number[]>;
  /** The key whose secret hashes to `hash`, revoked or not; undefined when none. */
  findKey(hash: string): Promise<KeyRecord | undefined>;
  createKey(key: KeyRecord & { hash: string }): Promise<void>;
  listKeys(): Promise<KeyRecord[]>;
  /** Marks the key revoked; false when there is no such key or it was revoked already. */
  revokeKey(id: string, now: number): Promise<boolean>;
  /**
   * Key ▸ burst window ▸ monthly quota (reservations in flight count) ▸ concurrency, atomically
   * and, on PostgreSQL, in one round trip (docs/architecture.md §2 "ext_authz").
   */
  check(req: CheckRequest): Promise<CheckResult>;
  /**
   * Takes an open lease for one attempt, atomically across every policy replica: `claimed` for
   * the one caller that takes it, `held` while another attempt holds it, `spent` once it is
   * closed (or never was). The lease is matched by its id, key and operation together: a signed
   * lease whose key or operation differ from the lease granted under that id was never granted
   * (`spent`), whatever signed it. docs/architecture.md §4.
   */
  claim(lease: ClaimedLease): Promise<ClaimResult>;
  /** Gives a claim back: the attempt that held it did no work (a 503 the edge retries). Matched as claim(). */
  release(lease: ClaimedLease): Promise<void>;
  /** Closes a lease once: frees its places, writes its usage record when the outcome is recorded. */
  settle(outcome: SettleOutcome): Promise<SettleResult>;
  /**
   * Expires open leases whose time has passed: frees places, records them unsettled. Returns how
   * many. Also forgets leases closed without a record more than CLOSED_LEASE_MEMORY_MS ago.
   */
  expire(now: number): Promise<number>;
  /** Calls counted against a key's month: metered usage plus reservations in flight. */
  monthUsed(keyId: string, month: string): Promise<number>;
  /** Render places a key holds now. */
  inFlight(keyId: string): Promise<number>;
  /** Leases of a key granted and not yet settled or expired (renders and pings alike). */
  openLeases(keyId: string): Promise<number>;
  /** The ledger of a key, oldest first. */
  usage(keyId: string): Promise<UsageRecord[]>;
  /** Answers when the store can serve (readiness). */
  ping(): Promise<void>;
  close(): Promise<void>;
}
