/**
 * The ext_authz check, made exactly as Envoy's HTTP ext_authz filter makes it (docs/architecture.md §2):
 * the client's method, `EXT_AUTHZ_PREFIX` + the original path with its query, only the headers
 * of AUTHZ_REQUEST_HEADERS, no body. 200 allows; any other answer is the client's answer.
 */
import http from 'node:http';
import { EXT_AUTHZ_PREFIX } from '../../lib/policy-contract.ts';
import { ALLOW_CLIENT_HEADERS, ALLOW_UPSTREAM_HEADERS, AUTHZ_REQUEST_HEADERS, DENY_CLIENT_HEADERS } from './contract.ts';

export type Headers = Record<string, string>;

export type AuthzDecision =
  | { allowed: true; upstream: Headers; client: Headers }
  | { allowed: false; status: number; client: Headers; body: Buffer };

/** How long a kept-alive connection to policy may stay unused before the edge drops it. */
export const AUTHZ_IDLE_MS = 60_000;
/** Connections to policy at most: no more than policy holds from one peer (lib/config.ts perPeerConnections). */
export const AUTHZ_MAX_SOCKETS = 256;

/** Raised when policy cannot be asked (refused, reset, timed out); Envoy's `status_on_error`. */
export class AuthzUnavailable extends Error {
  override name = 'AuthzUnavailable';
}

export interface AuthzClient {
  /** `clientGone` gives the check up as Envoy does when its client resets: policy sees the close. */
  check(method: string, pathWithQuery: string, clientHeaders: http.IncomingHttpHeaders, trace: Headers, clientGone?: AbortSignal): Promise<AuthzDecision>;
  close(): void;
}

function pick(from: http.IncomingHttpHeaders, names: readonly string[]): Headers {
  const out: Headers = {};
  for (const n of names) {
    const v = from[n];
    if (typeof v === 'string') out[n] = v;
    else if (Array.isArray(v) && v.length > 0) out[n] = v.join(', ');
  }
  return out;
}

/** An ext_authz client for the policy server at `policyUrl` (http://host:port). */
export function createAuthzClient(policyUrl: string, timeoutMs: number): AuthzClient {
  const base = new URL(policyUrl);
  // Idle connections are dropped well before policy's keep-alive timeout (policy/server.ts, 120 s),
  // so a check never goes out on a connection policy is closing.
  const agent = new http.Agent({ keepAlive: true, maxSockets: AUTHZ_MAX_SOCKETS, timeout: AUTHZ_IDLE_MS });
  return {
    check(method, pathWithQuery, clientHeaders, trace, clientGone) {
      const headers: Headers = { ...pick(clientHeaders, AUTHZ_REQUEST_HEADERS), ...trace, 'content-length': '0' };
      return new Promise((resolve, reject) => {
        const req = http.request(
          {
            host: base.hostname,
            port: base.port,
            method,
            path: EXT_AUTHZ_PREFIX + pathWithQuery,
            headers,
            agent,
            timeout: timeoutMs,
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.once('error', () => reject(new AuthzUnavailable('policy answer broke off')));
            res.once('end', () => {
              const status = res.statusCode ?? 502;
              if (status === 200) {
                resolve({
                  allowed: true,
                  upstream: pick(res.headers, ALLOW_UPSTREAM_HEADERS),
                  client: pick(res.headers, ALLOW_CLIENT_HEADERS),
                });
              } else {
                resolve({ allowed: false, status, client: pick(res.headers, DENY_CLIENT_HEADERS), body: Buffer.concat(chunks) });
              }
            });
          },
        );
        // At the timeout the answer may already be here, unread behind the timer (a busy event
        // loop): it is read first, so a grant policy sent in time is not dropped, its lease left
        // to expire. Otherwise the check is given up, and the connection closed says so to
        // policy, which withdraws a grant it makes after that.
        let answered = false;
        req.once('response', () => (answered = true));
        req.once('timeout', () => setImmediate(() => {
          if (!answered) req.destroy(new AuthzUnavailable('policy timed out'));
        }));
        // The client went away: the check is given up at once, so policy withdraws its grant
        // instead of leaving a lease nobody carries to expire.
        const onGone = (): void => {
          if (!answered) req.destroy(new AuthzUnavailable('client gone'));
        };
        clientGone?.addEventListener('abort', onGone, { once: true });
        req.once('close', () => clientGone?.removeEventListener('abort', onGone));
        req.once('error', (err) => reject(err instanceof AuthzUnavailable ? err : new AuthzUnavailable('policy unreachable')));
        req.end();
      });
    },
    close() {
      agent.destroy();
    },
  };
}
