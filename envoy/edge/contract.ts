/**
 * What the embedded edge and the cluster's Envoy config (charts/tintype/files/envoy.yaml, as the
 * chart renders it) both promise (docs/architecture.md §1, §2). The envoy.yaml test checks what
 * `helm template` renders against these same lists, so the two edges cannot drift apart.
 */
import { ServiceError, ValidationFailure } from '../../lib/errors.ts';
import { KEY_ID_HEADER, LEASE_HEADER, RATELIMIT_LIMIT_HEADER, RATELIMIT_REMAINING_HEADER } from '../../lib/policy-contract.ts';

/** Client request headers sent to policy's ext_authz check (and nothing else, no body). */
export const AUTHZ_REQUEST_HEADERS = ['authorization', 'traceparent'] as const;

/** Policy headers passed to the client when it denies (spec 2.1: www-authenticate, retry-after, x-ratelimit-*). */
export const DENY_CLIENT_HEADERS = [
  'content-type',
  'www-authenticate',
  'retry-after',
  RATELIMIT_LIMIT_HEADER,
  RATELIMIT_REMAINING_HEADER,
] as const;

/** Policy headers added to the client's answer when it allows (spec 2.1: every answer carries the position). */
export const ALLOW_CLIENT_HEADERS = [RATELIMIT_LIMIT_HEADER, RATELIMIT_REMAINING_HEADER] as const;

/** Policy headers added to the request that goes upstream to the renderer when it allows. */
export const ALLOW_UPSTREAM_HEADERS = [LEASE_HEADER, KEY_ID_HEADER] as const;

/** Client headers never sent upstream: the key stays at the edge (spec 5), and lease headers come only from policy. */
export const STRIPPED_UPSTREAM_HEADERS = ['authorization', LEASE_HEADER, KEY_ID_HEADER] as const;

/** Public paths answered without a key. */
export const OPENAPI_PATH = '/openapi.json';

/** Paths routed to the renderer after the check. */
export const ROUTED_PREFIX = '/v1/';

/** How long the edge waits for the renderer's answer headers: the render budget and a margin (Envoy route timeout). */
export const UPSTREAM_MARGIN_MS = 15_000;

/**
 * Edge timeouts that follow the render budget; the chart sets them all from the one value
 * `renderBudgetMs` (its envoy.yaml marks which these are). `route`: how long the edge waits for
 * the renderer's answer headers, the budget and a margin (504 `render_timeout` after it). `streamIdle`: a stream
 * with no bytes either way for this long is dropped; a render sends nothing until it answers, so
 * it is longer than `route` and never cuts a render short.
 */
export function budgetTimeouts(renderBudgetMs: number): { routeMs: number; streamIdleMs: number } {
  const routeMs = renderBudgetMs + UPSTREAM_MARGIN_MS;
  return { routeMs, streamIdleMs: routeMs + UPSTREAM_MARGIN_MS };
}

/** A client has this long to send its request headers (408 after it). */
export const REQUEST_HEADERS_TIMEOUT_MS = 10_000;

/** A client has this long to send its whole request, body included (408 after it). */
export const REQUEST_TIMEOUT_MS = 60_000;

/**
 * A kept-alive client connection with no request on it is closed after this long (Envoy's
 * `idle_timeout` on the public listener). Far longer than client pools keep an idle connection,
 * so the client lets go first: a request sent as the edge closes its connection is lost to the
 * client ("socket hang up"), and a render is not safe to send again. Node's own 5 s lost them.
 */
export const IDLE_TIMEOUT_MS = 300_000;

/**
 * Largest request header section a client may send (431 after it): Node's own limit
 * (`http.maxHeaderSize`), which the embedded edge's public listener applies.
 */
export const MAX_REQUEST_HEADER_BYTES = 16_384;

/** Client connections the edge holds at once (docs/operations.md, "The edge"); past it a new connection is closed at once. */
export const MAX_CONNECTIONS = 1024;

/**
 * How a routed request is retried, by both edges, once and on another renderer: when nothing of
 * it reached a renderer (connect failure, a stream refused, a reset before the request went out),
 * and on a renderer's 503 (`busy` before taking a slot leaves the lease open for exactly this).
 */
export const RETRY = {
  attempts: 1,
  on: ['connect-failure', 'refused-stream', 'reset-before-request'],
  statuses: [503],
} as const;

/**
 * The answers the edge writes itself, by status, with the spec's bodies (spec Part 7; 404, 408
 * and 431 are decisions where the spec is silent, docs/decisions.md). 400: a request that is not valid
 * HTTP, or one Envoy's hygiene refuses (a header name with `_`, an escaped slash in the path).
 */
export const LOCAL_REPLIES: Readonly<Record<number, Readonly<Record<string, unknown>>>> = {
  400: new ValidationFailure([{ path: 'request', message: 'not a valid HTTP request' }]).answer().body,
  404: new ServiceError('not_found').answer().body,
  405: new ServiceError('method_not_allowed').answer().body,
  408: new ServiceError('request_timeout').answer().body,
  413: new ServiceError('payload_too_large').answer().body,
  431: new ServiceError('headers_too_large').answer().body,
  503: new ServiceError('busy').answer().body,
  504: new ServiceError('render_timeout').answer().body,
};
