/**
 * What crosses between the edge (Envoy or the embedded edge), policy and the renderer
 * (docs/architecture.md §2, "ext_authz" and "settle").
 *
 * ext_authz: the edge sends the client's method, `EXT_AUTHZ_PREFIX + original path` and the
 * headers `authorization` and `traceparent`, no body. Policy answers a denial with the exact
 * client answer (always 4xx), or 200 with the upstream headers `x-tintype-lease`,
 * `x-tintype-key` and the client headers `x-ratelimit-limit`, `x-ratelimit-remaining`.
 *
 * claim: the renderer, once it has checked a lease and before any work, posts `{"lease": …}` to
 * `CLAIM_PATH`: 204 when this attempt has taken the lease (it is now spent for every other),
 * 409 while another attempt holds it, 410 once it is closed or for one policy never granted,
 * 401 for a lease policy did not sign. A 503 on an attempt the edge may retry gives the claim
 * back (`RELEASE_PATH`, 204) instead of settling (leavesLeaseOpen). docs/architecture.md §4.
 *
 * settle: the renderer, once its answer is decided and before it sends it, posts a SettleRequest with the signed
 * lease as JSON to `SETTLE_PATH` on policy (lib/lease.ts). Settle is idempotent; the answer is
 * 204, 401 for a lease policy did not sign, 404 for one it never granted.
 *
 * Policy serves ext_authz on one listener (the edge's) and claim, release and settle on another
 * (the renderers'), so a network policy can let each peer reach only its own; the renderers'
 * takes a call only with the renderer token (lib/renderer-token.ts).
 */
import { isMetered } from './errors.ts';
import { policyPoster } from './policy-poster.ts';

export const EXT_AUTHZ_PREFIX = '/authz';
export const SETTLE_PATH = '/settle';
export const CLAIM_PATH = '/claim';
export const RELEASE_PATH = '/release';

/** What a claim found (docs/architecture.md §4): taken now, held by another attempt, or closed. */
export type ClaimResult = 'claimed' | 'held' | 'spent';
/** The status policy answers each claim result with. */
export const CLAIM_STATUS: Readonly<Record<ClaimResult, number>> = { claimed: 204, held: 409, spent: 410 };
export const LEASE_HEADER = 'x-tintype-lease';
export const KEY_ID_HEADER = 'x-tintype-key';
export const RATELIMIT_LIMIT_HEADER = 'x-ratelimit-limit';
export const RATELIMIT_REMAINING_HEADER = 'x-ratelimit-remaining';

/**
 * Largest request body, in bytes (spec Part 8, "Request body size"): the edge answers 413 past
 * it before any key lookup, and the renderer bounds its own reading by it.
 */
export const MAX_BODY_BYTES = 4_194_304;

/** The form of a lease id, and of the key id a lease names: 1 to 64 base64url characters. */
export const LEASE_ID_FORM = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * Request header bytes policy and the renderer accept: an edge's client limit (16 KiB, Node's
 * default) and room for what the edge adds on the way (lease, key id, trace and forwarding
 * headers). A request an edge let through is then never refused behind it with a bare 431
 * after its lease was granted.
 */
export const ROLE_MAX_REQUEST_HEADER_BYTES = 16_384 + 8_192;

/**
 * The attempt a routed request is (1, 2, …), as Envoy sends it with the route's
 * `include_attempt_count_in_request`; the embedded edge sends it too when it may retry. Absent
 * means the edge will not try the lease again.
 */
export const ATTEMPT_HEADER = 'x-envoy-attempt-count';

/** Attempts an edge makes with one lease: the first and one retry on another renderer. */
export const LEASE_ATTEMPTS = 2;

/**
 * Whether an answer leaves its lease open instead of settling it: a 503 (`busy`,
 * `guard_unverified`; nothing rendered, nothing metered) on an attempt the edge may still retry
 * on another renderer. That retry settles the lease; were it closed here, the retry's render
 * would settle `already`, unmetered and outside the key's concurrency limit.
 */
export function leavesLeaseOpen(status: number, attemptHeader: string | undefined): boolean {
  if (status !== 503 || attemptHeader === undefined || !/^\d{1,3}$/.test(attemptHeader)) return false;
  const attempt = Number(attemptHeader);
  return attempt >= 1 && attempt < LEASE_ATTEMPTS;
}

/** The operations of spec Part 4, derived from the path. */
export const OPERATIONS = {
  ping: { method: 'GET', path: '/v1/ping', render: false },
  screenshot: { method: 'POST', path: '/v1/screenshot', render: true },
  'html-to-image': { method: 'POST', path: '/v1/html-to-image', render: true },
  pdf: { method: 'POST', path: '/v1/pdf', render: true },
  og: { method: 'GET', path: '/v1/og', render: true },
} as const;
export type Operation = keyof typeof OPERATIONS;

/** The operation a request path (query ignored) names, or undefined for any other path. */
export function operationFor(pathWithQuery: string): Operation | undefined {
  const p = pathWithQuery.split('?', 1)[0];
  for (const [op, d] of Object.entries(OPERATIONS)) if (d.path === p) return op as Operation;
  return undefined;
}

/** The `x-cache` values (spec 2.1): whether anything was rendered for a call. */
export const CACHE_OUTCOMES = ['hit', 'miss'] as const;
export type CacheOutcome = (typeof CACHE_OUTCOMES)[number];

/** What the renderer reports when it has answered a leased request. */
export interface SettleRequest {
  /** The signed lease as policy granted it. */
  lease: string;
  /** The HTTP status the client got. */
  status: number;
  /** The `error` code of the answer, when it was an error with one. */
  error?: string;
  /** For 200 answers of render operations: whether anything was rendered. */
  cache?: CacheOutcome;
}

/** Whether a settle with this outcome is metered (200, 502, 504). */
export function settleIsMetered(outcome: Pick<SettleRequest, 'status'>): boolean {
  return isMetered(outcome.status);
}

/**
 * The lease ledger as seen by the renderer: in-process in tests, HTTP to policy in deployments.
 * A claim that cannot reach policy throws: the renderer then answers 503 `busy` and does nothing.
 */
export interface Settler {
  claim(lease: string): Promise<ClaimResult>;
  release(lease: string): Promise<void>;
  settle(outcome: SettleRequest): Promise<void>;
}

/**
 * A Settler that posts to policy's renderer listener over kept-alive connections
 * (lib/policy-poster.ts): a fraction of fetch's cost per call, for a claim and a settle on every
 * answer of `tintype start` (bench/edge.ts).
 */
export function agentSettler(policyUrl: string, options: { token?: string; timeoutMs?: number; idleMs?: number } = {}): Settler & { close(): void } {
  const { post, close } = policyPoster(policyUrl, { maxSockets: 64, ...options });
  return {
    async claim(lease) {
      const status = await post(CLAIM_PATH, { lease });
      const result = (Object.keys(CLAIM_STATUS) as ClaimResult[]).find((r) => CLAIM_STATUS[r] === status);
      // A 401 (a lease policy did not sign, which this renderer's public keys accepted) is spent too.
      if (status === 401) return 'spent';
      if (result === undefined) throw new Error(`claim answered ${status}`);
      return result;
    },
    async release(lease) {
      const status = await post(RELEASE_PATH, { lease });
      if (status !== 204) throw new Error(`release answered ${status}`);
    },
    async settle(outcome) {
      const status = await post(SETTLE_PATH, outcome);
      if (status !== 204 && status !== 200) throw new Error(`settle answered ${status}`);
    },
    close,
  };
}
