/**
 * The ext_authz decision (docs/architecture.md §2): key (401) ▸ burst window (429 rate_limited) ▸ monthly
 * quota counting reservations in flight (429 quota_exceeded) ▸ render places (429
 * concurrent_limit). A grant is a lease that the renderer settles.
 */
import { ServiceError } from '../lib/errors.ts';
import { CACHE_OUTCOMES, LEASE_ID_FORM, OPERATIONS, type CacheOutcome, type Operation, type SettleRequest, settleIsMetered } from '../lib/policy-contract.ts';
import { type Clock, WINDOW_SEC, monthOf, nextMonthStart, secondsToWindowEnd, windowStart } from './calendar.ts';
import type { Plans } from './plans.ts';
import { lookupHash, newLeaseId } from './secrets.ts';
import type { PolicyStore, SettleResult } from './store/store.ts';

/** The burst position reported in x-ratelimit-* on every answer for a known key (spec 2.1). */
export interface RatePosition {
  limit: number;
  remaining: number;
}

export type Decision =
  | { allow: true; leaseId: string; keyId: string; rate: RatePosition; expiresAt: number }
  | { allow: false; error: ServiceError; rate?: RatePosition };

export interface PolicyOptions {
  store: PolicyStore;
  plans: Plans;
  clock: Clock;
  /** How long a lease lives unsettled: render budget + grace (docs/architecture.md §2 settle). */
  leaseTtlMs: number;
}

/** A settle request that does not hold together; answered 400 by the server. */
export class BadSettle extends Error {
  override name = 'BadSettle';
}

export interface Policy {
  /** Decides one request. Throws when the store cannot answer (the caller fails closed). */
  check(authorization: string | undefined, operation: Operation): Promise<Decision>;
  /**
   * Records a lease's outcome, once. Throws BadSettle for a malformed request. `keyId`: the key
   * the signed lease names, when the caller has it (the store then need not look it up).
   */
  settle(req: unknown, keyId?: string): Promise<SettleResult>;
  /** Expires leases past their time; returns how many. */
  expire(): Promise<number>;
}

export function createPolicy(o: PolicyOptions): Policy {
  const { store, plans, clock } = o;
  return {
    async check(authorization, operation) {
      const now = clock();
      const leaseId = newLeaseId();
      const expiresAt = now + o.leaseTtlMs;
      // Every case, header missing or malformed included, costs the same one lookup (spec Part 5 rule 4).
      const r = await store.check({
        hash: lookupHash(authorization),
        leaseId,
        operation,
        render: OPERATIONS[operation].render,
        now,
        windowStart: windowStart(now),
        month: monthOf(now),
        expiresAt,
        plans,
      });
      if (r.outcome === 'unauthorized') return { allow: false, error: new ServiceError('unauthorized') };
      if (r.outcome === 'no_plan') throw new Error(`key ${r.keyId} is on plan "${r.plan}", which is not defined`);
      const plan = r.limits;
      const key = { id: r.keyId };
      const rate = { limit: plan.perMinute, remaining: Math.max(0, plan.perMinute - r.windowCount) };
      switch (r.outcome) {
        case 'granted':
          return { allow: true, leaseId, keyId: key.id, rate, expiresAt };
        case 'rate_limited': {
          const retryAfterSec = secondsToWindowEnd(now);
          return { allow: false, rate, error: new ServiceError('rate_limited', { limit: plan.perMinute, windowSec: WINDOW_SEC, retryAfterSec }) };
        }
        case 'quota_exceeded':
          return {
            allow: false,
            rate,
            error: new ServiceError('quota_exceeded', { limit: plan.monthlyQuota, month: monthOf(now), resetsAt: nextMonthStart(now) }),
          };
        case 'concurrent_limit':
          return { allow: false, rate, error: new ServiceError('concurrent_limit', { limit: plan.concurrentRenders }) };
      }
    },

    async settle(req, keyId) {
      const s = parseSettle(req);
      return store.settle({
        leaseId: s.lease,
        ...(keyId === undefined ? {} : { keyId }),
        status: s.status,
        error: s.error ?? null,
        cache: s.cache ?? null,
        metered: settleIsMetered(s),
        recorded: settleIsRecorded(s),
        now: clock(),
      });
    },

    async expire() {
      return store.expire(clock());
    },
  };
}

/**
 * Whether a settled outcome writes a usage record. A 400, a 413 and a 503 write none
 * (docs/architecture.md §6, spec Part 8 rule 4: a 413 is a refusal before the handler, and "503s
 * write no usage"; docs/operations.md "Usage ledger"); they still close the lease. A 422 is recorded, not metered (Part 8 rule 8 leaves it open). Everything
 * else is recorded, metered or not as settleIsMetered says.
 */
export function settleIsRecorded(outcome: Pick<SettleRequest, 'status'>): boolean {
  return outcome.status !== 400 && outcome.status !== 413 && outcome.status !== 503;
}

/** Validates a SettleRequest (lib/policy-contract.ts). */
export function parseSettle(v: unknown): SettleRequest {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new BadSettle('body must be a JSON object');
  const r = v as Record<string, unknown>;
  for (const k of Object.keys(r)) if (!['lease', 'status', 'error', 'cache'].includes(k)) throw new BadSettle(`unknown field ${k}`);
  if (typeof r.lease !== 'string' || !LEASE_ID_FORM.test(r.lease)) throw new BadSettle('lease must be a lease id');
  if (typeof r.status !== 'number' || !Number.isInteger(r.status) || r.status < 100 || r.status > 599) {
    throw new BadSettle('status must be an HTTP status');
  }
  if (r.error !== undefined && (typeof r.error !== 'string' || !/^[a-z_]{1,40}$/.test(r.error))) {
    throw new BadSettle('error must be an error code');
  }
  if (r.cache !== undefined && !(CACHE_OUTCOMES as readonly unknown[]).includes(r.cache)) throw new BadSettle('cache must be hit or miss');
  const out: SettleRequest = { lease: r.lease, status: r.status };
  if (r.error !== undefined) out.error = r.error as string;
  if (r.cache !== undefined) out.cache = r.cache as CacheOutcome;
  return out;
}
