/**
 * A key's egress policy where the renderer meets it (docs/security.md "Egress policy per key"):
 * the page address of a `url` render is matched before the cache and before a slot (spec 4.4
 * rule 3 asks the guard's check there; the guard matches it again with every hop), and a render
 * under an enforced list is cached apart, since it may lack what a wider list fetched.
 */
import { type EgressAuditEntry, type EgressPolicy, egressDigest, hostMatcher } from '../../lib/egress.ts';
import type { RejectReason } from '../../lib/errors.ts';

/** Whether a key with `policy` may have `url` rendered as its page (a report-mode list refuses nothing). */
export function pageAllowedForKey(url: string, policy: EgressPolicy | undefined): boolean {
  if (policy === undefined || policy.mode !== 'enforce') return true;
  const host = new URL(url).hostname;
  // An address literal is never in a list of names.
  if (host.startsWith('[') || /^[0-9.]+$/.test(host)) return false;
  return hostMatcher(policy).allows(host);
}

/**
 * The audit record of a page address refused before a slot: the guard never sees that call, so
 * the renderer records it as the guard would (host and port only).
 */
export function pageRefusal(url: string, reason: RejectReason, policy: EgressPolicy | undefined, now: () => number): EgressAuditEntry {
  let host: string | null = null;
  let port: number | null = null;
  try {
    const u = new URL(url);
    host = u.hostname.replace(/^\[|\]$/g, '') || null;
    port = u.port === '' ? (u.protocol === 'https:' ? 443 : u.protocol === 'http:' ? 80 : null) : Number(u.port);
  } catch {
    // not an address the parser reads: no host to record
  }
  return { at: now(), host, port, decision: 'refused', reason, mode: policy?.mode ?? null };
}

/**
 * The cache key of a render under `policy`: the request's own key for no list or a report-mode
 * list (nothing is left out of such a render), and apart per enforced list, so a caller never gets
 * a picture holding what its list refuses, fetched for another key (spec Part 8 rule 3 shares
 * entries between callers).
 */
export function keyedCacheKey(key: string, policy: EgressPolicy | undefined): string {
  return policy === undefined || policy.mode !== 'enforce' ? key : `${key}.egress-${egressDigest(policy)}`;
}
