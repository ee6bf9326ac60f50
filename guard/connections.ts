/**
 * What a peer can hold of a guard's listener before it has a tunnel (docs/security.md "The
 * guard", "Capacity"): connections in all (`GUARD_MAX_CONNECTIONS`) and per peer address
 * (`GUARD_MAX_CONNECTIONS_PER_PEER`; a unix socket's peers have none and share the total), a
 * request head that must arrive within seconds (`GUARD_HEADERS_TIMEOUT_MS`, 10 s: a relay's is a
 * few hundred bytes, sent at once) and a whole request, its body too, within a bound
 * (`GUARD_REQUEST_TIMEOUT_MS`, 60 s: a page's upload, inside its render's budget).
 * A tunnel, once open, is the tunnel's: its idle timeout holds it (tunnel.ts).
 */
import type http from 'node:http';

export interface ConnectionLimits {
  maxConnections: number;
  maxConnectionsPerPeer: number;
  /** A request's head must have arrived this long after its first byte. */
  headersTimeoutMs: number;
  /** A whole request (head and body) must have arrived this long after its first byte. */
  requestTimeoutMs: number;
}

/** How often Node looks for requests past these bounds (its default is 30 s). */
const CHECK_EVERY_MS = 1_000;

/** Server options for the timeouts; the caps are applied by lib/peers.ts limitConnections. */
export function timeoutOptions(limits: ConnectionLimits): http.ServerOptions {
  return {
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    connectionsCheckingInterval: Math.min(CHECK_EVERY_MS, limits.headersTimeoutMs),
  };
}
