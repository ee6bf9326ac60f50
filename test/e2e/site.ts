/**
 * What the e2e renders fetch: a small "public" site on 127.0.0.2 (the tests open exactly that
 * address with GUARD_ALLOW_CIDRS, so 127.0.0.1 stays refused), with pages the tests control,
 * and a DNS server on loopback that answers every name with NXDOMAIN, so `dns_failure` is
 * produced without a query ever leaving the machine (GUARD_DNS_SERVERS).
 */
import dgram from 'node:dgram';
import http from 'node:http';
import { listenBesideService } from '../lib/listen-beside.ts';

export const SITE_ADDRESS = '127.0.0.2';

/** A 1x1 PNG. */
const PIXEL = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');

/** How long a test waits for a held image's request: far above a render's start, far below tap's timeout. */
const ARRIVAL_BOUND_MS = 60_000;

export interface Site {
  /** `http://127.0.0.2:<port>` */
  base: string;
  /** Paths requested so far. */
  seen: string[];
  /**
   * Resolves when `/hold/<id>.png` has been requested (the render holding it is in flight);
   * rejects, naming it, if that has not happened within ARRIVAL_BOUND_MS.
   */
  arrived(id: string): Promise<void>;
  /** Answers a held `/hold/<id>.png`. */
  release(id: string): void;
  close(): Promise<void>;
}

/**
 * Paths: `/page/<anything>` an HTML page; `/img.png` (any query) a pixel; `/redirect/<n>` n
 * redirects before a page; `/hold/<id>.png` a pixel once
 * released; `/hang.png` never answered; `/download` a file Chromium downloads instead of showing,
 * so the target answers but no page can be rendered (spec Part 7 `render_failed`).
 */
export async function startSite(address = SITE_ADDRESS): Promise<Site> {
  const seen: string[] = [];
  const held = new Map<string, () => void>();
  const released = new Set<string>();
  const waiting = new Map<string, () => void>();
  const arrivedSet = new Set<string>();
  const server = http.createServer((req, res) => {
    const url = req.url ?? '/';
    seen.push(url);
    const hold = /^\/hold\/([a-z0-9-]+)\.png$/.exec(url);
    const redirect = /^\/redirect\/(\d+)$/.exec(url);
    if (url.startsWith('/page/')) {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<!doctype html><html><body style="background:#fff"><h1>tintype e2e</h1><p>a public page</p></body></html>');
    } else if (redirect !== null) {
      const left = Number(redirect[1]);
      res.writeHead(302, { location: left > 0 ? `/redirect/${left - 1}` : '/page/landed' }).end();
    } else if (url === '/img.png' || url.startsWith('/img.png?')) {
      res.writeHead(200, { 'content-type': 'image/png' }).end(PIXEL);
    } else if (hold !== null) {
      const id = hold[1]!;
      const answer = (): void => void res.writeHead(200, { 'content-type': 'image/png' }).end(PIXEL);
      arrivedSet.add(id);
      waiting.get(id)?.();
      if (released.has(id)) answer();
      else held.set(id, answer);
    } else if (url === '/hang.png') {
      // never answered; the socket closes when the render's context does
    } else if (url === '/download') {
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-disposition': 'attachment; filename="x.bin"' });
      res.end(Buffer.alloc(1024));
    } else {
      res.writeHead(404).end();
    }
  });
  const port = await listenBesideService(server, address);
  return {
    base: `http://${address}:${port}`,
    seen,
    arrived: (id) =>
      arrivedSet.has(id)
        ? Promise.resolve()
        : new Promise((resolve, reject) => {
            const late = setTimeout(() => reject(new Error(`/hold/${id}.png was not requested within ${ARRIVAL_BOUND_MS} ms: its render answered without it, or never began`)), ARRIVAL_BOUND_MS);
            late.unref();
            waiting.set(id, () => {
              clearTimeout(late);
              resolve();
            });
          }),
    release(id) {
      released.add(id);
      held.get(id)?.();
      held.delete(id);
    },
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

/** A DNS server on 127.0.0.1 that answers every query NXDOMAIN; returns its `ip:port`. */
export async function startNxdomainDns(address = '127.0.0.1'): Promise<{ server: string; close(): Promise<void> }> {
  const sock = dgram.createSocket('udp4');
  sock.on('message', (msg, rinfo) => {
    if (msg.length < 12) return;
    // Header: same id, QR=1, opcode 0, RD copied, RA=1, RCODE=3; the question echoed, no answers.
    const reply = Buffer.from(msg);
    reply[2] = 0x80 | (msg[2]! & 0x01);
    reply[3] = 0x83;
    reply.writeUInt16BE(0, 6);
    reply.writeUInt16BE(0, 8);
    reply.writeUInt16BE(0, 10);
    sock.send(reply.subarray(0, questionEnd(msg)), rinfo.port, rinfo.address);
  });
  await new Promise<void>((resolve) => sock.bind(0, address, resolve));
  return {
    server: `${address}:${sock.address().port}`,
    close: () => new Promise<void>((resolve) => sock.close(() => resolve())),
  };
}

/** The offset just past the first question (name labels, type, class). */
function questionEnd(msg: Buffer): number {
  let i = 12;
  while (i < msg.length && msg[i] !== 0) i += msg[i]! + 1;
  return Math.min(msg.length, i + 5);
}
