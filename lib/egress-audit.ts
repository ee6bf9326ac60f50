/**
 * How a keyed render's guard decisions reach the audit trail (docs/architecture.md §2 "egress
 * audit"): the guard hands them to the renderer with the render's tally, and the renderer, once
 * the render ended and its answer left, posts them with the render's lease to policy's renderer
 * listener (`POST /egress-audit`, 204). Policy takes the key, the lease id and the operation from
 * the lease's signature, never from the body, queues the records and writes them in batches to
 * the ledger's store. Nothing here is on a request's path: a post that fails is tried twice more,
 * then given up and counted.
 */
import { policyPoster } from './policy-poster.ts';
import { type EgressAuditEntry, MAX_AUDIT_PER_RENDER, parseAuditEntries } from './egress.ts';
import { MAX_LEASE_CHARS } from './lease.ts';

export const EGRESS_AUDIT_PATH = '/egress-audit';

/** One render's decisions as the renderer posts them. */
export interface EgressAuditPost {
  /** The render's signed lease. */
  lease: string;
  entries: EgressAuditEntry[];
  /** Decisions the guard counted past its bound per render, not kept. */
  dropped: number;
}

/** The largest body policy reads at EGRESS_AUDIT_PATH: a lease and a guard's bound of entries. */
export const EGRESS_AUDIT_BODY_LIMIT = MAX_LEASE_CHARS + MAX_AUDIT_PER_RENDER * 2 * 200;

/** The post of a body, or undefined when it is not one (an entry of the wrong shape is left out). */
export function parseAuditPost(value: unknown): EgressAuditPost | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const v = value as Partial<EgressAuditPost>;
  if (typeof v.lease !== 'string' || !Array.isArray(v.entries)) return undefined;
  const dropped = Number.isSafeInteger(v.dropped) && (v.dropped as number) >= 0 ? (v.dropped as number) : 0;
  // The renderer adds up its reads of one render: at most two guard bounds' worth.
  return { lease: v.lease, entries: parseAuditEntries(v.entries.slice(0, 2 * MAX_AUDIT_PER_RENDER)), dropped };
}

/** Renders' posts waiting at most; past it a render's decisions are given up (and counted). */
const MAX_WAITING = 1_000;
const RETRY_MS = [500, 2_000];

export interface AuditPoster {
  /** Queues one render's decisions; never waits and never throws. */
  send(post: EgressAuditPost): void;
  /** Renders' decisions given up so far (queue full, or policy did not take them). */
  lost(): number;
  /** Waits for the posts in flight (bounded by their timeouts), then stops. */
  close(): Promise<void>;
}

/** A poster to policy's renderer listener at `policyUrl`, one post at a time over kept-alive connections. */
export function auditPoster(policyUrl: string, options: { token?: string; onLost?: (why: string) => void } = {}): AuditPoster {
  const poster = policyPoster(policyUrl, { maxSockets: 2, ...(options.token === undefined ? {} : { token: options.token }) });
  const waiting: EgressAuditPost[] = [];
  let given = 0;
  let running: Promise<void> | undefined;
  const lose = (why: string): void => {
    given += 1;
    options.onLost?.(why);
  };
  const deliver = async (p: EgressAuditPost): Promise<void> => {
    for (let attempt = 0; ; attempt++) {
      const status = await poster.post(EGRESS_AUDIT_PATH, p).catch(() => 0);
      if (status === 204) return;
      // A 4xx will not change with another try; a 5xx or no answer may.
      const wait = status >= 400 && status < 500 ? undefined : RETRY_MS[attempt];
      if (wait === undefined) return lose(`policy answered ${status}`);
      await new Promise((r) => setTimeout(r, wait));
    }
  };
  const drain = async (): Promise<void> => {
    for (let next = waiting.shift(); next !== undefined; next = waiting.shift()) await deliver(next);
    running = undefined;
  };
  return {
    send(p) {
      if (waiting.length >= MAX_WAITING) return lose('queue full');
      waiting.push(p);
      running ??= drain();
    },
    lost: () => given,
    async close() {
      await running;
      poster.close();
    },
  };
}
