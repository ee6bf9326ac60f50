/**
 * What the embedded edge and envoy/envoy.yaml both promise (docs/architecture.md §1, §2). The envoy.yaml
 * test checks the YAML against these same lists, so the two edges cannot drift apart.
 */

/** Largest request body, in bytes (spec Part 8, "Request body size"); over it: 413 before any key lookup. */
export const MAX_BODY_BYTES = 4_194_304;

/** Client request headers sent to policy's ext_authz check (and nothing else, no body). */
export const AUTHZ_REQUEST_HEADERS = ['authorization', 'traceparent'] as const;

/** Policy headers passed to the client when it denies (spec 2.1: www-authenticate, retry-after, x-ratelimit-*). */
export const DENY_CLIENT_HEADERS = [
  'content-type',
  'www-authenticate',
  'retry-after',
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
] as const;

/** Policy headers added to the client's answer when it allows (spec 2.1: every answer carries the position). */
export const ALLOW_CLIENT_HEADERS = ['x-ratelimit-limit', 'x-ratelimit-remaining'] as const;

/** Policy headers added to the request that goes upstream to the renderer when it allows. */
export const ALLOW_UPSTREAM_HEADERS = ['x-tintype-lease', 'x-tintype-key'] as const;

/** Client headers never sent upstream: the key stays at the edge (spec 5), and lease headers come only from policy. */
export const STRIPPED_UPSTREAM_HEADERS = ['authorization', 'x-tintype-lease', 'x-tintype-key'] as const;

/** Public paths answered without a key. */
export const OPENAPI_PATH = '/openapi.json';

/** Paths routed to the renderer after the check. */
export const ROUTED_PREFIX = '/v1/';

/** How long the edge waits for the renderer's answer headers: the render budget and a margin (Envoy route timeout). */
export const UPSTREAM_MARGIN_MS = 15_000;
