/**
 * The hop-by-hop headers (RFC 9110 §7.6.1, and the older `proxy-connection`), in lower case: they
 * concern one connection and are never passed on by a proxy or by the edge. Each user adds what
 * its own hop makes meaningless (the edge: `expect` and `content-length` of a body it already
 * holds; the guard: `expect`, which Node's server answers itself).
 */

/** The headers that manage the connection itself. */
export const CONNECTION_HEADERS: ReadonlySet<string> = new Set(['connection', 'keep-alive', 'proxy-connection']);

/** The proxy's own credentials and challenge: `proxy-authorization` names a render and must never reach a target. */
export const PROXY_AUTH_HEADERS: ReadonlySet<string> = new Set(['proxy-authorization', 'proxy-authenticate']);

/** Every hop-by-hop header. */
export const HOP_BY_HOP: ReadonlySet<string> = new Set([
  ...CONNECTION_HEADERS,
  ...PROXY_AUTH_HEADERS,
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);
