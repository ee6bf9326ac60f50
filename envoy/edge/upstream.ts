/**
 * The route to the renderer: the buffered body and the client's headers, minus the key and any
 * lease header a client tried to forge, plus the lease headers policy granted (DESIGN.md §4).
 * The answer streams back with the rate-limit position added. A client that goes away aborts
 * the upstream request at once, so the renderer frees the slot and settles not metered.
 */
import http from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { STRIPPED_UPSTREAM_HEADERS } from './contract.ts';
import type { Headers } from './answers.ts';

/** Hop-by-hop headers (RFC 9110 7.6.1) plus `expect`: the edge already holds the body. */
const HOP_BY_HOP = new Set([
  'connection', 'keep-alive', 'proxy-connection', 'proxy-authorization', 'proxy-authenticate',
  'te', 'trailer', 'transfer-encoding', 'upgrade', 'expect', 'content-length',
]);
const NOT_UPSTREAM = new Set<string>([...HOP_BY_HOP, ...STRIPPED_UPSTREAM_HEADERS, 'traceparent', 'tracestate']);

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
    if (v !== undefined && !HOP_BY_HOP.has(k)) out[k] = v;
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
  forward(req: IncomingMessage, res: ServerResponse, body: Buffer, granted: Headers, client: Headers, trace: Headers): Promise<UpstreamOutcome>;
  close(): void;
}

/** A forwarder to the renderer at `rendererUrl`; `timeoutMs` bounds the wait for answer headers. */
export function createUpstream(rendererUrl: string, timeoutMs: number): Upstream {
  const base = new URL(rendererUrl);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1024 });
  return {
    forward(req, res, body, granted, client, trace) {
      return new Promise((resolve) => {
        let settled = false;
        const done = (o: UpstreamOutcome): void => {
          if (settled) return;
          settled = true;
          resolve(o);
        };
        const ureq = http.request({
          host: base.hostname,
          port: base.port,
          method: req.method,
          path: req.url,
          headers: upstreamRequestHeaders(req.headers, granted, trace, body.length),
          agent,
        });
        const timer = setTimeout(() => {
          ureq.destroy();
          done({ kind: 'timeout' });
        }, timeoutMs);
        // The client went away before its answer was complete: abort the render now.
        const onClientGone = (): void => {
          if (res.writableFinished) return;
          clearTimeout(timer);
          ureq.destroy();
          done({ kind: 'client_gone' });
        };
        res.once('close', onClientGone);
        ureq.once('response', (ures) => {
          clearTimeout(timer);
          const status = ures.statusCode ?? 502;
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
        ureq.once('error', () => {
          clearTimeout(timer);
          if (res.headersSent) {
            res.destroy();
            done({ kind: 'answered', status: res.statusCode, complete: false });
          } else done({ kind: 'unavailable' });
        });
        ureq.end(body);
      });
    },
    close() {
      agent.destroy();
    },
  };
}
