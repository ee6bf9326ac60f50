/**
 * Guards that do their job wrong, for the self-test's failure tests (the real guard is
 * guard/). Both speak the guard's protocol (lib/guard-contract.ts): absolute-form HTTP,
 * CONNECT, and `GET /renders/<token>` for a render's tally.
 * - `open`: forwards everything to the address the request names and counts nothing (a guard
 *   whose rules let private addresses through).
 * - `uncounted`: refuses everything but never counts a refusal (a guard whose tally is broken).
 */
import http from 'node:http';
import net from 'node:net';
import { GUARD_REASON_HEADER, renderTokenFromPath } from '../../../lib/guard-contract.ts';

export interface StandInGuard {
  socketPath: string;
  url: string;
  /** Proxy requests and tunnels it was asked for. */
  requests(): number;
  close(): Promise<void>;
}

export async function startStandInGuard(options: { socketPath: string; mode: 'open' | 'uncounted' }): Promise<StandInGuard> {
  let requests = 0;
  const sockets = new Set<net.Socket>();
  const track = (s: net.Socket): void => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  };
  const onRequest = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    const url = req.url ?? '';
    if (renderTokenFromPath(url) !== undefined) {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ blocked: 0, firstReason: null, refused: [] }));
      return;
    }
    requests += 1;
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      res.writeHead(400).end();
      return;
    }
    if (options.mode === 'uncounted') {
      res.writeHead(403, { [GUARD_REASON_HEADER]: 'private_address', 'content-length': '0' }).end();
      return;
    }
    const headers = { ...req.headers };
    delete headers['proxy-authorization'];
    const upstream = http.request({
      host: target.hostname.replace(/^\[|\]$/g, ''),
      port: target.port || 80,
      method: req.method,
      path: target.pathname + target.search,
      headers,
    });
    upstream.on('response', (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => res.headersSent ? res.destroy() : res.writeHead(502).end());
    req.pipe(upstream);
  };
  const onConnect = (req: http.IncomingMessage, socket: net.Socket, head: Buffer): void => {
    requests += 1;
    track(socket);
    socket.on('error', () => socket.destroy());
    const m = /^(.*):(\d+)$/.exec(req.url ?? '');
    if (options.mode === 'uncounted' || m === null) {
      socket.end(`HTTP/1.1 403 Forbidden\r\n${GUARD_REASON_HEADER}: private_address\r\nContent-Length: 0\r\n\r\n`);
      return;
    }
    const upstream = net.connect({ host: m[1]!.replace(/^\[|\]$/g, ''), port: Number(m[2]) }, () => {
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      upstream.pipe(socket);
      socket.pipe(upstream);
    });
    track(upstream);
    upstream.on('error', () => socket.destroy());
    socket.on('close', () => upstream.destroy());
  };
  const servers = [http.createServer(onRequest), http.createServer(onRequest)];
  for (const s of servers) {
    s.on('connect', onConnect);
    s.on('connection', track);
  }
  await new Promise<void>((r) => servers[0]!.listen(options.socketPath, r));
  await new Promise<void>((r) => servers[1]!.listen(0, '127.0.0.1', r));
  return {
    socketPath: options.socketPath,
    url: `http://127.0.0.1:${(servers[1]!.address() as net.AddressInfo).port}`,
    requests: () => requests,
    async close() {
      for (const s of sockets) s.destroy();
      await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
    },
  };
}
