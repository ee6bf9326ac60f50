/**
 * Refusals a replica answers from memory (docs/architecture.md §2 "The counters store"): once the
 * store refused a key for its burst window, the answer cannot change before the window ends; once
 * it refused a key for its month with no reservation of the key in flight, it cannot change
 * before the month turns (no lease is left to give a reservation back). Until then the same
 * refusal is answered with no store round trip. A month's refusal still counts against the burst
 * window as the stores count it (key ▸ window ▸ month), here in this replica's memory: past the
 * window's limit the answer is rate_limited. Held to the limits it was decided under: a plan
 * that changes decides again.
 */
import type { CheckRequest, CheckResult, Limits } from '../store.ts';

/** Keys remembered at most; past it the memory starts again. */
export const REFUSAL_ENTRIES = 100_000;

interface Refusal {
  outcome: 'rate_limited' | 'quota_exceeded';
  /** rate_limited: the window it holds for; quota_exceeded: the month. */
  until: number | string;
  limits: Readonly<Limits>;
  windowStart: number;
  windowCount: number;
}

export interface Refusals {
  /** The remembered refusal of the key that still holds for this request, if any. */
  of(keyId: string, r: CheckRequest, limits: Readonly<Limits>): CheckResult | undefined;
  /** Notes a store's answer: a refusal that cannot change is kept, anything else forgets the key. */
  note(keyId: string, r: CheckRequest, result: CheckResult, openLeases: number): void;
}

export function refusals(): Refusals {
  let byKey = new Map<string, Refusal>();
  return {
    of(keyId, r, limits) {
      const m = byKey.get(keyId);
      if (m === undefined) return undefined;
      const holds = m.limits === limits && (m.outcome === 'rate_limited' ? m.until === r.windowStart : m.until === r.month);
      if (!holds) {
        byKey.delete(keyId);
        return undefined;
      }
      if (m.outcome === 'quota_exceeded') {
        if (m.windowStart !== r.windowStart) {
          m.windowStart = r.windowStart;
          m.windowCount = 0;
        }
        if (m.windowCount >= limits.perMinute) return { outcome: 'rate_limited', keyId, limits, windowCount: m.windowCount };
        m.windowCount += 1;
      }
      return { outcome: m.outcome, keyId, limits, windowCount: m.windowCount };
    },
    note(keyId, r, result, openLeases) {
      if (result.outcome === 'rate_limited' || (result.outcome === 'quota_exceeded' && openLeases === 0)) {
        if (byKey.size >= REFUSAL_ENTRIES) byKey = new Map();
        const until = result.outcome === 'rate_limited' ? r.windowStart : r.month;
        byKey.set(keyId, { outcome: result.outcome, until, limits: result.limits, windowStart: r.windowStart, windowCount: result.windowCount });
      } else {
        byKey.delete(keyId);
      }
    },
  };
}
