/**
 * Shared parts of the guard's end-to-end tests: canary listeners that count every accepted
 * connection, a target server on an allowed loopback address, and clients that speak to the
 * guard the way a proxy client does.
 */
import http from 'node:http';
import net from 'node:net';
import puppeteer, { type Browser, type BrowserContext } from 'puppeteer-core';
import { listenBesideService } from '../lib/listen-beside.ts';
import { spawnTintype, type TintypeProcess } from '../tintype.ts';
import { TEST_LEASE_ENV } from '../lib/leases.ts';

/** A TCP listener on a refused address; `accepted` must stay zero. */
export interface Canary {
  host: string;
  port: number;
  accepted(): number;
  close(): Promise<void>;
}

/** Starts a canary on `host` (any free port unless `port` is given, e.g. 80 inside a test's own namespace). */
export async function startCanary(host: string, port = 0): Promise<Canary> {
  let accepted = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((s) => {
    accepted += 1;
    sockets.add(s);
    s.on('error', () => s.destroy());
    s.on('close', () => sockets.delete(s));
    // Answer like a web server would, so a leak would also be visible to the page.
    s.end('HTTP/1.1 200 OK\r\ncontent-length: 6\r\nconnection: close\r\n\r\nCANARY');
  });
  if (port === 0) await listenBesideService(server, host);
  else await new Promise<void>((resolve) => server.listen(port, host, resolve));
  return {
    host,
    port: (server.address() as net.AddressInfo).port,
    accepted: () => accepted,
    close: () =>
      new Promise((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** Resolves once a plain TCP connection to `host:port` has been accepted (a canary self-check). */
export function touch(host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, host, () => {
      s.destroy();
      resolve();
    });
    s.on('error', reject);
  });
}

/** Listens an http.Server on host, at a port no guard under test listens on (listen-beside.ts); answers its port. */
export function listenOn(server: http.Server | net.Server, host: string): Promise<number> {
  return listenBesideService(server, host);
}

export function closeServer(server: http.Server | net.Server): Promise<void> {
  if (server instanceof http.Server) server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

export interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** Sends one absolute-form request through the guard on a fresh connection. */
export function viaGuard(
  guard: { port?: number; socket?: string; host?: string },
  target: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request({
      ...(guard.socket !== undefined ? { socketPath: guard.socket } : { host: guard.host ?? '127.0.0.1', port: guard.port }),
      method: options.method ?? 'GET',
      path: target,
      headers: options.headers,
      agent: false,
    });
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

/** Sends raw bytes to the guard and collects everything it answers until it closes. */
export function rawExchange(port: number, bytes: string, waitMs = 2_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    let out = '';
    const timer = setTimeout(() => {
      s.destroy();
      resolve(out);
    }, waitMs);
    s.setEncoding('latin1');
    s.on('data', (c: string) => (out += c));
    s.on('close', () => {
      clearTimeout(timer);
      resolve(out);
    });
    s.on('error', (err) => {
      clearTimeout(timer);
      if (out !== '') resolve(out);
      else reject(err);
    });
    s.write(bytes, 'latin1');
  });
}

/** Opens a CONNECT tunnel; answers the status line and, on 200, the open socket. */
export function connectVia(
  port: number,
  authority: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: http.IncomingHttpHeaders; socket?: net.Socket }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method: 'CONNECT', path: authority, headers, agent: false });
    req.on('connect', (res, socket) => {
      if (res.statusCode === 200) resolve({ status: 200, headers: res.headers, socket });
      else {
        socket.destroy();
        resolve({ status: res.statusCode ?? 0, headers: res.headers });
      }
    });
    req.on('response', (res) => {
      res.resume();
      resolve({ status: res.statusCode ?? 0, headers: res.headers });
    });
    req.on('error', reject);
    req.end();
  });
}

/** The Chromium the guard's browser tests drive (the headless shell). */
export const CHROMIUM = '/usr/bin/chromium-headless-shell';

/**
 * Launches Chromium the way docs/architecture.md §6 asks: a launch-level proxy for its own traffic,
 * `<-loopback>` so loopback is not sent around it, no QUIC, no non-proxied WebRTC UDP, and
 * host-resolver rules that resolve nothing locally (the proxy is reached by address).
 */
export function launchChromium(launchProxy: string): Promise<Browser> {
  return puppeteer.launch({
    executablePath: CHROMIUM,
    headless: 'shell',
    pipe: true,
    args: [
      `--proxy-server=${launchProxy}`,
      '--proxy-bypass-list=<-loopback>',
      '--disable-quic',
      '--force-webrtc-ip-handling-policy=disable_non_proxied_udp',
      '--webrtc-ip-handling-policy=disable_non_proxied_udp',
      '--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1',
      '--disable-background-networking',
      '--disable-component-update',
      '--no-first-run',
      '--disable-gpu',
      '--no-sandbox', // the tests run as root, where Chromium's sandbox refuses to start
    ],
  });
}

/** A fresh browser context whose every request goes to `proxy`, loopback included. */
export function guardedContext(browser: Browser, proxy: string): Promise<BrowserContext> {
  return browser.createBrowserContext({ proxyServer: proxy, proxyBypassList: ['<-loopback>'] });
}

/** Waits, a bounded number of rounds, until `cond` holds; answers whether it did. */
export async function eventually(cond: () => boolean, rounds = 1200, everyMs = 25): Promise<boolean> {
  for (let i = 0; i < rounds; i += 1) {
    if (cond()) return true;
    await new Promise((r) => setTimeout(r, everyMs));
  }
  return cond();
}

/** Starts `tintype guard` and waits for the line that says the admin port is up. */
export function startGuardProcess(env: Record<string, string>): Promise<TintypeProcess & { port: number; adminPort: number }> {
  return new Promise((resolve, reject) => {
    // The render token key of the test roles (test/lib/leases.ts) unless the test gives its own.
    const g = spawnTintype('guard', { GUARD_TOKEN_KEY: TEST_LEASE_ENV.GUARD_TOKEN_KEY, ...env }, (line) => {
      if (line.event === 'guard.admin_listening') {
        const listening = g.lines.find((l) => l.event === 'guard.listening');
        resolve({ ...g, port: Number(listening.port), adminPort: Number(line.port) });
      }
    });
    void g.exited.then((code) => reject(new Error(`tintype guard exited with ${code}: ${JSON.stringify(g.lines)}`)));
  });
}
