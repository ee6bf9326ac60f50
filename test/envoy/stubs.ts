/**
 * Small stand-ins for policy and the renderer that follow the HTTP contract of
 * lib/policy-contract.ts on real sockets, so the edge is tested alone.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { KEY_ID_HEADER, LEASE_HEADER, RATELIMIT_LIMIT_HEADER, RATELIMIT_REMAINING_HEADER } from '../../lib/policy-contract.ts';
import { CACHE_HEADER } from '../../renderer/server/answer-headers.ts';

export interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  bodyLength: number;
}

export interface Stub {
  url: string;
  seen: Seen[];
  close(): Promise<void>;
}

async function listen(handler: http.RequestListener): Promise<{ server: http.Server; url: string }> {
  const server = http.createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

function closer(server: http.Server): () => Promise<void> {
  return () => {
    server.closeAllConnections();
    return new Promise((r) => server.close(() => r()));
  };
}

/**
 * Policy: `Bearer sk_good…` is allowed, `Bearer sk_slow…` too but 300 ms later, `Bearer sk_busy…`
 * is rate limited, anything else is 401. `givenUp`: the checks whose requester closed before
 * their answer.
 */
export async function policyStub(): Promise<Stub & { givenUp: string[] }> {
  const seen: Seen[] = [];
  const givenUp: string[] = [];
  const { server, url } = await listen((req, res) => {
    res.once('close', () => {
      if (!res.writableFinished) givenUp.push(req.url ?? '');
    });
    let n = 0;
    req.on('data', (c: Buffer) => (n += c.length));
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, bodyLength: n });
      const auth = req.headers['authorization'] ?? '';
      const position = { [RATELIMIT_LIMIT_HEADER]: '60', [RATELIMIT_REMAINING_HEADER]: '41' };
      if (auth.startsWith('Bearer sk_good') || auth.startsWith('Bearer sk_slow')) {
        const allow = (): void => {
          res.writeHead(200, { ...position, [LEASE_HEADER]: 'lease-1', [KEY_ID_HEADER]: 'key-1', 'x-policy-internal': 'no' });
          res.end();
        };
        if (auth.startsWith('Bearer sk_slow')) setTimeout(allow, 300);
        else allow();
      } else if (auth.startsWith('Bearer sk_busy')) {
        const body = JSON.stringify({ error: 'rate_limited', limit: 60, windowSec: 60, retryAfterSec: 17 });
        res.writeHead(429, { ...position, [RATELIMIT_REMAINING_HEADER]: '0', 'retry-after': '17', 'content-type': 'application/json; charset=utf-8', 'x-policy-internal': 'no' });
        res.end(body);
      } else {
        res.writeHead(401, { 'content-type': 'application/json; charset=utf-8', 'www-authenticate': 'Bearer', 'x-policy-internal': 'no' });
        res.end(JSON.stringify({ error: 'unauthorized' }));
      }
    });
  });
  return { url, seen, givenUp, close: closer(server) };
}

export interface RendererStub extends Stub {
  /** Requests whose client went away before the stub answered. */
  aborted: string[];
}

/**
 * Renderer: `/v1/echo` answers the body back as a PNG-typed stream in pieces; `/v1/slow` never
 * answers until its request is aborted; anything else answers a small JSON body.
 */
export async function rendererStub(): Promise<RendererStub> {
  const seen: Seen[] = [];
  const aborted: string[] = [];
  const { server, url } = await listen((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, bodyLength: body.length });
      const path = (req.url ?? '').split('?', 1)[0];
      if (path === '/v1/slow') {
        res.once('close', () => {
          if (!res.writableFinished) aborted.push(req.url ?? '');
        });
        return;
      }
      if (path === '/v1/echo') {
        res.writeHead(200, { 'content-type': 'image/png', [CACHE_HEADER]: 'miss', 'cache-control': 'no-store', [RATELIMIT_LIMIT_HEADER]: 'forged' });
        const half = Math.floor(body.length / 2);
        res.write(body.subarray(0, half));
        setTimeout(() => res.end(body.subarray(half)), 10);
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
      res.end(JSON.stringify({ pong: true, app: 'tintype', version: '0.0.0' }));
    });
  });
  return { url, seen, aborted, close: closer(server) };
}
