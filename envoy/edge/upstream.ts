/**
 * The route to the renderers (a fixed list, or a host set that follows the endpoints, hosts.ts):
 * the buffered body and the client's headers, minus the key and any lease header a client tried
 * to forge, plus the lease headers policy granted (docs/architecture.md §2).
 * The answer streams back with the rate-limit position added. A client that goes away aborts
 * the upstream request at once, so the renderer frees the slot and settles not metered. With
 * more than one renderer, a 503 or a refused connection is tried once more on another one with
 * the same lease (as envoy/envoy.yaml's retry policy with `previous_hosts`); the renderer that
 * answered 503 left the lease open for it. The whole exchange is bounded like Envoy's route
 * timeout: an answer still streaming at the render budget plus the margin is cut.
 */
import http from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ATTEMPT_HEADER, LEASE_ATTEMPTS } from '../../lib/policy-contract.ts';
import { STRIPPED_UPSTREAM_HEADERS } from './contract.ts';
import type { Headers } from '../../lib/answers.ts';
import { drain } from '../../lib/body.ts';
import { HOP_BY_HOP } from '../../lib/hop-by-hop.ts';
import { fixedHosts, type RendererHost, type RendererHosts } from './hosts.ts';

/** Hop-by-hop headers plus `expect` and `content-length`: the edge already holds the body. */
const NOT_PASSED_ON = new Set([...HOP_BY_HOP, 'expect', 'content-length']);
const NOT_UPSTREAM = new Set<string>([...NOT_PASSED_ON, ...STRIPPED_UPSTREAM_HEADERS, ATTEMPT_HEADER, 'traceparent', 'tracestate']);

/** Client headers as they go upstream: the key and forged lease headers removed. */
export function upstreamRequestHeaders(client: http.IncomingHttpHeaders, granted: Headers, trace: Headers, bodyLength: number): http.OutgoingHttpHeaders {
  const out: http.OutgoingHttpHeaders = {};
  for (const k in client) {
    const v = client[k];
    if (v !== undefined && !NOT_UPSTREAM.has(k)) out[k] = v;
  }
  Object.assign(out, trace, granted);
  out['content-length'] = String(bodyLength);
  return out;
}

/** Renderer answer headers as they go to the client, with the rate-limit position added. */
export function clientResponseHeaders(upstream: http.IncomingHttpHeaders, added: Headers): http.OutgoingHttpHeaders {
  const out: http.OutgoingHttpHeaders = {};
  for (const k in upstream) {
    const v = upstream[k];
    if (v !== undefined && !NOT_PASSED_ON.has(k)) out[k] = v;
  }
  if (upstream['content-length'] !== undefined) out['content-length'] = upstream['content-length'];
  Object.assign(out, added);
  return out;
}

export type UpstreamOutcome =
  | { kind: 'answered'; status: number; complete: boolean }
  | { kind: 'client_gone' }
  | { kind: 'unavailable' }
  | { kind: 'timeout' };

export interface Upstream {
  /** Routes one request; `clientGone` aborts when the client went away (also before the call). */
  forward(
    req: IncomingMessage, res: ServerResponse, body: Buffer, granted: Headers, client: Headers, trace: Headers, clientGone: AbortSignal,
  ): Promise<UpstreamOutcome>;
  close(): void;
}

/**
 * How long a kept-alive connection to the renderer may stay unused before the edge drops it:
 * under Node's server keep-alive timeout (5 s), so the edge lets go of an idle connection before
 * the renderer closes it under a request.
 */
export const UPSTREAM_IDLE_MS = 4_000;

/**
 * The connection was reset before the whole request was written (Envoy's `reset-before-request`):
 * the renderer never had a request to work on, so sending it again cannot render it twice. A
 * reset after that (a renderer that died mid-render) is not sent again, as with Envoy: a page
 * that kills its renderer must not get a second one.
 */
function resetBeforeRequest(written: boolean, err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  return !written && (code === 'ECONNRESET' || code === 'EPIPE');
}

/** A renderer that could not be reached at all: the request never arrived (Envoy's `connect-failure`). */
function refusedConnect(err: unknown): boolean {
  return (err as { code?: unknown }).code === 'ECONNREFUSED';
}

/** Why a request went to another renderer (Envoy's `retry_on` reasons that apply). */
export type RetryReason = 'connect-failure' | 'reset-before-request' | '503';

/**
 * A forwarder to `renderers` (a fixed list of URLs, taken in turn, or a host set that follows the
 * cluster's endpoints); `timeoutMs` bounds the whole exchange, from sending the request to the
 * answer's last byte. `onRetry` hears of each request sent again, and which renderer it leaves.
 */
export function createUpstream(
  renderers: readonly string[] | RendererHosts, timeoutMs: number, onRetry: (reason: RetryReason, host: string) => void = () => {},
): Upstream {
  const hosts = Array.isArray(renderers) ? fixedHosts(renderers) : renderers as RendererHosts;
  // `timeout` on the agent drops free sockets idle that long (a socket in use only gets an event nobody acts on).
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1024, timeout: UPSTREAM_IDLE_MS });
  return {
    forward(req, res, body, granted, client, trace, clientGone) {
      // Gone while the check was made: nothing is sent, so nothing is rendered or metered.
      if (clientGone.aborted) return Promise.resolve({ kind: 'client_gone' });
      const tried = new Set<string>();
      return new Promise((resolve) => {
        let settled = false;
        let ureq: http.ClientRequest | undefined;
        const done = (o: UpstreamOutcome): void => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          clientGone.removeEventListener('abort', onClientGone);
          resolve(o);
        };
        // Envoy's route timeout: no answer by then is a 504; an answer still streaming is cut,
        // and stays settled as what the renderer decided.
        const timer = setTimeout(() => {
          ureq?.destroy();
          if (res.headersSent) {
            res.destroy();
            done({ kind: 'answered', status: res.statusCode, complete: false });
          } else done({ kind: 'timeout' });
        }, timeoutMs);
        // The client went away before its answer was complete: abort the render now.
        const onClientGone = (): void => {
          ureq?.destroy();
          done({ kind: 'client_gone' });
        };
        clientGone.addEventListener('abort', onClientGone, { once: true });
        const attempt = (number: number, mayResend: boolean, again?: RendererHost): void => {
          // No renderer may take it (none ready, as Envoy's panic threshold 0 leaves it): 503 busy.
          const host = again ?? hosts.pick(tried);
          if (host === undefined) return done({ kind: 'unavailable' });
          tried.add(host.key);
          const headers = upstreamRequestHeaders(req.headers, granted, trace, body.length);
          const mayRetry = number < LEASE_ATTEMPTS && hosts.another(tried);
          // Said only when a retry may follow, so a renderer alone closes its lease on a 503 as before.
          if (mayRetry || number > 1) headers[ATTEMPT_HEADER] = String(number);
          const retry = (reason: RetryReason): void => {
            onRetry(reason, host.key);
            attempt(number + 1, true);
          };
          host.active += 1;
          const sent = http.request({ host: host.url.hostname, port: host.url.port, method: req.method, path: req.url, headers, agent });
          sent.once('close', () => (host.active -= 1));
          ureq = sent;
          let written = false;
          sent.once('finish', () => (written = true));
          sent.once('response', (ures) => {
            if (settled) return drain(ures);
            const status = ures.statusCode ?? 502;
            if (status === 503 && mayRetry) {
              // Nothing was rendered and the lease is still open: the next renderer gets it.
              drain(ures);
              ures.once('end', () => {
                if (!settled) retry('503');
              });
              ures.once('error', () => {
                if (!settled) retry('503');
              });
              return;
            }
            res.writeHead(status, clientResponseHeaders(ures.headers, client));
            ures.pipe(res);
            ures.once('end', () => done({ kind: 'answered', status, complete: true }));
            ures.once('error', () => {
              res.destroy();
              done({ kind: 'answered', status, complete: false });
            });
            ures.once('close', () => {
              if (!ures.complete) {
                res.destroy();
                done({ kind: 'answered', status, complete: false });
              }
            });
          });
          sent.once('error', (err) => {
            if (settled) return;
            // The body is held, so the request goes again, once, on a new connection; otherwise
            // its lease would wait for expiry.
            if (mayResend && !res.headersSent && resetBeforeRequest(written, err)) {
              onRetry('reset-before-request', host.key);
              attempt(number, false, host);
              return;
            }
            if (mayRetry && !res.headersSent && refusedConnect(err)) {
              retry('connect-failure');
              return;
            }
            if (res.headersSent) {
              res.destroy();
              done({ kind: 'answered', status: res.statusCode, complete: false });
            } else done({ kind: 'unavailable' });
          });
          sent.end(body);
        };
        attempt(1, true);
      });
    },
    close() {
      agent.destroy();
    },
  };
}
