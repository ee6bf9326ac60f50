/**
 * A key's egress policy (docs/security.md "Egress policy per key"): host patterns a key's renders
 * may reach, and whether a fetch outside them is refused (`enforce`) or only recorded
 * (`report`). Policy validates it, signs it into the key's leases (lib/lease.ts), the renderer
 * checks a page address and keys its cache with it, and the guard matches every fetch of the
 * render against it. One home for its form, its text in a lease and its matching.
 */
import { createHash } from 'node:crypto';
import { domainToASCII } from 'node:url';
import { isRejectReason, type RejectReason } from './errors.ts';

export const EGRESS_MODES = ['enforce', 'report'] as const;
export type EgressMode = (typeof EGRESS_MODES)[number];

/** What a guard decided for one fetch of a keyed render (docs/operations.md "Egress policy and audit"). */
export const EGRESS_DECISIONS = ['allowed', 'refused', 'would_refuse'] as const;
export type EgressDecision = (typeof EGRESS_DECISIONS)[number];

/** The most patterns a key's list holds. */
export const MAX_EGRESS_PATTERNS = 64;
/**
 * The longest a list may be written out (comma-separated). The list rides in the lease, in a
 * header the edge adds to the client's (lib/policy-contract.ts ROLE_MAX_REQUEST_HEADER_BYTES
 * leaves 8 KiB for what the edge adds), so it is bounded as a whole too.
 */
export const MAX_EGRESS_TEXT = 4_096;

/** A key's policy: its mode and its patterns, lower-case ASCII, sorted, each once. */
export interface EgressPolicy {
  mode: EgressMode;
  allow: readonly string[];
}

/** A pattern that is not one. */
export class EgressPolicyError extends Error {
  override name = 'EgressPolicyError';
}

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/** One pattern's canonical form (`example.com`, `*.example.com`), or an EgressPolicyError. */
export function parsePattern(text: string): string {
  const trimmed = text.trim();
  // Letters (any script, for IDNA), digits, dots and hyphens only: domainToASCII would cut a
  // path, port or userinfo off silently.
  if (/[^\p{L}\p{N}\p{M}.*-]/u.test(trimmed)) throw new EgressPolicyError(`"${trimmed}" is not a host name or *.host name`);
  const wildcard = trimmed.startsWith('*.');
  const name = domainToASCII((wildcard ? trimmed.slice(2) : trimmed).replace(/\.$/, '').toLowerCase());
  const labels = name.split('.');
  if (name === '' || name.length > 253 || !labels.every((l) => LABEL.test(l))) {
    throw new EgressPolicyError(`"${trimmed}" is not a host name or *.host name`);
  }
  // An address is judged by the guard's address rules, never matched as a name.
  if (/^[0-9]+$/.test(labels[labels.length - 1]!)) throw new EgressPolicyError(`"${trimmed}" is an address, not a host name`);
  return wildcard ? `*.${name}` : name;
}

/** A policy from a comma-separated list and a mode; throws EgressPolicyError naming what is wrong. */
export function parseEgressPolicy(allow: string | readonly string[], mode: string = 'enforce'): EgressPolicy {
  if (!(EGRESS_MODES as readonly string[]).includes(mode)) throw new EgressPolicyError(`mode must be enforce or report, not "${mode}"`);
  const items = (typeof allow === 'string' ? allow.split(',') : allow).filter((p) => p.trim() !== '');
  if (items.length === 0) throw new EgressPolicyError('the list names no host');
  const patterns = [...new Set(items.map(parsePattern))].sort();
  if (patterns.length > MAX_EGRESS_PATTERNS) throw new EgressPolicyError(`at most ${MAX_EGRESS_PATTERNS} patterns, not ${patterns.length}`);
  if (patterns.join(',').length > MAX_EGRESS_TEXT) throw new EgressPolicyError(`the list is longer than ${MAX_EGRESS_TEXT} characters`);
  return { mode: mode as EgressMode, allow: patterns };
}

/** The policy as one line of text: `mode:pattern,pattern`. What is signed and stored. */
export function egressText(p: EgressPolicy): string {
  return `${p.mode}:${p.allow.join(',')}`;
}

/** The policy of a line egressText wrote; throws EgressPolicyError on anything else. */
export function parseEgressText(text: string): EgressPolicy {
  const colon = text.indexOf(':');
  if (colon < 0) throw new EgressPolicyError('no mode');
  const policy = parseEgressPolicy(text.slice(colon + 1), text.slice(0, colon));
  // Only the canonical text is accepted, so one policy has one text (and one cache key).
  if (egressText(policy) !== text) throw new EgressPolicyError('not in canonical form');
  return policy;
}

/** A short digest of the policy, for cache keys: renders under different lists differ. */
export function egressDigest(p: EgressPolicy): string {
  return createHash('sha256').update(egressText(p)).digest('base64url').slice(0, 22);
}

/** Matches host names against one policy's patterns; built once per render. */
export interface HostMatcher {
  readonly policy: EgressPolicy;
  /** Whether `host` (a name as the page asked for it; an address never matches) is in the list. */
  allows(host: string): boolean;
}

/**
 * `example.com` matches that name only; `*.example.com` matches any name below it
 * (`a.example.com`, `a.b.example.com`) but not `example.com` itself, and never
 * `evil-example.com` or `example.com.evil.net`: a name matches a wildcard only through a
 * whole label boundary.
 */
export function hostMatcher(policy: EgressPolicy): HostMatcher {
  const exact = new Set<string>();
  const below = new Set<string>();
  for (const p of policy.allow) {
    if (p.startsWith('*.')) below.add(p.slice(2));
    else exact.add(p);
  }
  return {
    policy,
    allows(host) {
      const name = host.toLowerCase().replace(/\.$/, '');
      if (exact.has(name)) return true;
      for (let dot = name.indexOf('.'); dot >= 0; dot = name.indexOf('.', dot + 1)) {
        if (below.has(name.slice(dot + 1))) return true;
      }
      return false;
    },
  };
}

/**
 * One guard decision of a keyed render as the guard records it: when, the host and port asked
 * for (never a path or query; null when the target named none it could read), what was decided,
 * why, and the key's mode (null: no policy). The key, lease and operation come from the lease.
 */
export interface EgressAuditEntry {
  at: number;
  host: string | null;
  port: number | null;
  decision: EgressDecision;
  reason: RejectReason | null;
  mode: EgressMode | null;
}

/**
 * Decisions a guard keeps per render until they are read; past it the rest are counted, not
 * kept (`auditDropped`), so a page that fetches without end cannot grow the guard's memory.
 */
export const MAX_AUDIT_PER_RENDER = 2_000;

/** Where the renderer opens a render's token with its lease: `POST` here, the lease in `x-tintype-lease`. */
export const RENDER_OPEN_METHOD = 'POST';

/** The entries of `value` that have an entry's shape; anything else is left out. */
export function parseAuditEntries(value: unknown): EgressAuditEntry[] {
  if (!Array.isArray(value)) return [];
  const out: EgressAuditEntry[] = [];
  for (const v of value.slice(0, MAX_AUDIT_PER_RENDER) as Array<Partial<EgressAuditEntry> | null>) {
    if (v === null || typeof v !== 'object' || !Number.isSafeInteger(v.at)) continue;
    if (!(v.host === null || (typeof v.host === 'string' && v.host.length <= 253))) continue;
    if (!(v.port === null || (Number.isInteger(v.port) && (v.port as number) >= 0 && (v.port as number) <= 65535))) continue;
    if (!(EGRESS_DECISIONS as readonly unknown[]).includes(v.decision)) continue;
    if (!(v.reason === null || isRejectReason(v.reason))) continue;
    if (!(v.mode === null || (EGRESS_MODES as readonly unknown[]).includes(v.mode))) continue;
    out.push({ at: v.at as number, host: v.host, port: v.port ?? null, decision: v.decision!, reason: v.reason, mode: v.mode ?? null });
  }
  return out;
}
