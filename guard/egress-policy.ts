/**
 * Keyed renders at the guard (docs/architecture.md §7 rule 4a; docs/security.md "Egress policy per
 * key"). Before a render's first fetch the renderer opens the render's token with the render's
 * signed lease (`POST /renders/<token>`, lib/egress.ts): the guard checks the signature with the
 * lease public keys and takes the key id, the lease id, the operation and the key's egress policy
 * from the lease alone, so nothing that cannot sign can name a wider policy. From then on every
 * fetch naming that token is judged by the spec's rules first and then by the policy, and each
 * decision is kept for the audit trail, which the renderer reads with the render's tally.
 */
import type { RejectReason } from '../lib/errors.ts';
import { type EgressAuditEntry, type EgressDecision, type HostMatcher, MAX_AUDIT_PER_RENDER, hostMatcher } from '../lib/egress.ts';
import type { LeaseVerifier } from '../lib/lease.ts';
import type { Counter, Registry } from '../lib/metrics.ts';
import { canonical } from './address.ts';
import type { Judgement } from './judge.ts';
import { isRefused, type Refused, type Target } from './target.ts';

/** What opening a render's token found. */
export type OpenResult = 'opened' | 'conflict' | 'forged' | 'no_keys';

/**
 * The guard's answer to each: 204; 409 for a token bound to another lease; 401 for a lease no
 * public key in force verifies, or expired; 501 for a guard given no lease public key.
 */
export const OPEN_STATUS: Readonly<Record<OpenResult, number>> = { opened: 204, conflict: 409, forged: 401, no_keys: 501 };

interface Binding {
  leaseId: string;
  matcher: HostMatcher | undefined;
  /** Kept until the lease's expiry and a margin: a render never outlives its lease. */
  until: number;
  audit: EgressAuditEntry[];
  dropped: number;
}

/** The audit of a render read so far, as the tally carries it. */
export interface AuditPart {
  audit: EgressAuditEntry[];
  auditDropped: number;
}

/** How long past its lease's expiry a render's binding is kept. */
const LINGER_MS = 60_000;

export class RenderEgress {
  private readonly bindings = new Map<string, Binding>();
  private readonly verifier: LeaseVerifier | undefined;
  private readonly now: () => number;
  private readonly maxEntries: number;
  private readonly decisions: Counter | undefined;

  constructor(options: { verifier?: LeaseVerifier; now?: () => number; maxEntries?: number; registry?: Registry } = {}) {
    this.verifier = options.verifier;
    this.now = options.now ?? Date.now;
    this.maxEntries = options.maxEntries ?? 10_000;
    this.decisions = options.registry?.counter(
      'tintype_guard_egress_decisions_total',
      'Decisions on fetches of keyed renders, by decision, reason and the key policy mode (none: no policy).',
    );
  }

  /**
   * Binds the render `token` names to the lease `lease`: once, and for that lease only (a second
   * open with another lease is a conflict and changes nothing).
   */
  open(token: string, lease: string): OpenResult {
    if (this.verifier === undefined) return 'no_keys';
    const claims = this.verifier.verify(lease);
    const now = this.now();
    if (claims === undefined || claims.expiresAt <= now) return 'forged';
    const bound = this.live(token, now);
    if (bound !== undefined) return bound.leaseId === claims.id ? 'opened' : 'conflict';
    for (const [t, b] of this.bindings) {
      if (b.until > now && this.bindings.size < this.maxEntries) break;
      this.bindings.delete(t);
    }
    this.bindings.set(token, {
      leaseId: claims.id,
      matcher: claims.egress === undefined ? undefined : hostMatcher(claims.egress),
      until: claims.expiresAt + LINGER_MS,
      audit: [],
      dropped: 0,
    });
    return 'opened';
  }

  /**
   * Judges one target for the render `token` names: a refusal the spec's rules already gave
   * (`early`) stands; in `enforce`, a name outside the key's list is refused before it is looked
   * up (no query for it leaves the guard) and an address after the address rules passed it;
   * otherwise `judge` decides, and in `report` a target outside the list is recorded
   * `would_refuse` and allowed. A render with no binding is judged as before and not recorded.
   */
  async judge(
    token: string | undefined,
    parsed: Target | Refused,
    judge: (t: Target | Refused) => Promise<Judgement>,
    early?: Judgement,
  ): Promise<Judgement> {
    const binding = token === undefined ? undefined : this.live(token, this.now());
    if (binding === undefined) return early ?? judge(parsed);
    const host = isRefused(parsed) ? null : parsed.host.kind === 'name' ? parsed.host.name : canonical(parsed.host.address);
    const port = isRefused(parsed) ? null : parsed.port;
    const matcher = binding.matcher;
    const outside = host !== null && matcher !== undefined && (isRefused(parsed) || parsed.host.kind === 'address' || !matcher.allows(host));
    let judged: Judgement;
    if (early !== undefined) judged = early;
    else if (outside && matcher.policy.mode === 'enforce' && !isRefused(parsed) && parsed.host.kind === 'name') {
      judged = { ok: false, reason: 'not_allowed_for_key' };
    } else judged = await judge(parsed);
    if (!judged.ok) {
      this.note(binding, host, port, 'refused', judged.reason);
      return judged;
    }
    if (!outside) {
      this.note(binding, host, port, 'allowed', null);
      return judged;
    }
    if (matcher.policy.mode === 'report') {
      this.note(binding, host, port, 'would_refuse', 'not_allowed_for_key');
      return judged;
    }
    this.note(binding, host, port, 'refused', 'not_allowed_for_key');
    return { ok: false, reason: 'not_allowed_for_key' };
  }

  /** The render's decisions since the last read, oldest first; forgets them (the binding stays). */
  takeAudit(token: string): AuditPart | undefined {
    const binding = this.live(token, this.now());
    if (binding === undefined) return undefined;
    const part = { audit: binding.audit, auditDropped: binding.dropped };
    binding.audit = [];
    binding.dropped = 0;
    return part;
  }

  /** How many renders are bound (for tests). */
  size(): number {
    return this.bindings.size;
  }

  private note(b: Binding, host: string | null, port: number | null, decision: EgressDecision, reason: RejectReason | null): void {
    const mode = b.matcher?.policy.mode ?? null;
    this.decisions?.inc({ decision, reason: reason ?? 'none', mode: mode ?? 'none' });
    if (b.audit.length >= MAX_AUDIT_PER_RENDER) {
      b.dropped += 1;
      return;
    }
    b.audit.push({ at: this.now(), host, port, decision, reason, mode });
  }

  private live(token: string, now: number): Binding | undefined {
    const b = this.bindings.get(token);
    if (b === undefined) return undefined;
    if (b.until <= now) {
      this.bindings.delete(token);
      return undefined;
    }
    return b;
  }
}
