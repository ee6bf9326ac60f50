/**
 * The renderer-side proxies Chromium talks to (docs/architecture.md §2 "guard"). A lane relay forwards
 * every request of the browser context bound to it to the guard, stamped with the
 * `Proxy-Authorization` of the render that owns the lane right now; whatever the browser sent
 * under that name is dropped. The refusing proxy is the launch-level `--proxy-server`: the
 * default context (Chromium's own background traffic) lands there and never reaches the guard.
 *
 * Both run in the renderer (pod isolation) or in the relay process inside the browser's
 * network namespace (netns isolation); this file has no notion of which.
 */
import http from 'node:http';
import type net from 'node:net';
import { CONNECTION_HEADERS, PROXY_AUTH_HEADERS } from '../../lib/hop-by-hop.ts';
import { closeOnError, survivesAcceptErrors } from '../../lib/sockets.ts';

/**
 * Opens a fresh connection to the guard for the render `render` names (its `Proxy-Authorization`
 * value): in pod isolation each render keeps to one guard (guard-pins.ts), so where a connection
 * goes can depend on it, and can take a lookup first.
 */
export type Dial = (render: string) => net.Socket | Promise<net.Socket>;

/** A lane's proxy listener and the switch that names its render. */
export interface LaneRelay {
  readonly server: http.Server;
  /**
   * Names the render owning the lane (a `Proxy-Authorization` value), or none between renders.
   * Every open connection of the lane is cut, so nothing started under one name goes on under another.
   */
  setAuthorization(value: string | undefined): void;
}

const REFUSAL = 'HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n';
const BAD_GATEWAY = 'HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n';
const TOO_MANY = 'HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n';

/** Request headers that concern the hop to the proxy, not the target. */
const HOP_REQUEST = new Set([...CONNECTION_HEADERS, ...PROXY_AUTH_HEADERS]);
/** Response headers the relay's own server manages for the browser's connection. */
const HOP_RESPONSE = CONNECTION_HEADERS;

/** How long the relay keeps trying a guard whose queue of connections waiting to be accepted is full. */
const GUARD_QUEUE_FULL_RETRY_MS = 5_000;

/**
 * Connects to the guard, trying again while its listen queue is full. A unix socket answers a
 * full queue with EAGAIN at once (TCP's SYN would wait and be sent again by the kernel); a
 * request given up there never reaches the guard, so it is never judged nor counted: a page's
 * refused request would be missing from `x-render-blocked`, and a refused document would look
 * like a target that failed, 502 instead of 422 (docs/architecture.md §2 "guard"). Gives up when
 * `wanted()` says the lane was cut or renamed, on any other error, or past the bound.
 */
export function connectGuard(
  dial: () => net.Socket | Promise<net.Socket>,
  wanted: () => boolean,
  track: (s: net.Socket) => net.Socket,
): Promise<net.Socket> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    let pause = 5;
    const attempt = (): void => {
      if (!wanted()) return reject(new Error('the lane was cut'));
      const dialled = dial();
      if (!(dialled instanceof Promise)) return connecting(dialled);
      dialled.then((socket) => {
        // Cut while the guard's address was being found: nothing goes on under the old name.
        if (wanted()) return connecting(socket);
        socket.destroy();
        reject(new Error('the lane was cut'));
      }, reject);
    };
    const connecting = (dialled: net.Socket): void => {
      const socket = track(dialled);
      let decided = false;
      const failed = (err: NodeJS.ErrnoException): void => {
        decided = true;
        socket.destroy();
        if (err.code !== 'EAGAIN' || performance.now() - started > GUARD_QUEUE_FULL_RETRY_MS) return reject(err);
        setTimeout(attempt, pause);
        pause = Math.min(pause * 2, 100);
      };
      socket.once('error', failed);
      socket.once('connect', () => {
        decided = true;
        socket.off('error', failed);
        resolve(closeOnError(socket));
      });
      // Destroyed by a cut before it connected or failed: given up.
      socket.once('close', () => {
        if (!decided) reject(new Error('closed before it connected'));
      });
    };
    attempt();
  });
}

function refuse(res: http.ServerResponse): void {
  res.writeHead(403, { 'content-length': '0', connection: 'close' });
  res.end();
}

/**
 * The part every relay listener shares: each connection Chromium opens keeps an error listener
 * for its whole life. Node's own leaves a socket at a CONNECT or upgrade, which is exactly where
 * a browser tearing down a render resets it while the refusal is written.
 */
function relayServer(handler: http.RequestListener): http.Server {
  const server = http.createServer(handler);
  server.on('connection', (socket: net.Socket) => closeOnError(socket));
  server.on('clientError', (_err, socket: net.Socket) => socket.destroy());
  survivesAcceptErrors(server);
  return server;
}

/** A proxy that refuses every request, CONNECT and upgrade without contacting anyone. */
export function createRefusingProxy(): http.Server {
  const server = relayServer((_req, res) => refuse(res));
  server.on('connect', (_req, socket: net.Socket) => socket.end(REFUSAL));
  server.on('upgrade', (_req, socket: net.Socket) => socket.end(REFUSAL));
  return server;
}

/**
 * A lane relay forwarding to the guard reached by `dial`. At most `maxOpen` tunnels of the lane
 * are open at once (the guard's bound per render, GUARD_MAX_TUNNELS_PER_RENDER): a CONNECT past
 * it is answered 503 here, and the guard never sees it. A tunnel counts once the guard opened it:
 * a CONNECT the guard refuses is short and still reaches the guard, to be counted in the tally.
 */
export function createLaneRelay(dial: Dial, maxOpen: number = Number.POSITIVE_INFINITY): LaneRelay {
  let authorization: string | undefined;
  /** Moves at every setAuthorization: a dial begun under an earlier name is given up. */
  let naming = 0;
  const current = (): (() => boolean) => {
    const at = naming;
    return () => at === naming;
  };
  const open = new Set<net.Socket>();
  const track = (socket: net.Socket): net.Socket => {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
    return socket;
  };
  /** Tunnels of the lane the guard opened, still open. */
  let tunnels = 0;

  const server = relayServer((req, res) => {
    const auth = authorization;
    // Only absolute-form requests are proxy requests; anything else is not ours to forward.
    if (auth === undefined || !/^https?:\/\//i.test(req.url ?? '')) {
      req.resume();
      return refuse(res);
    }
    const headers: Record<string, string | string[]> = {};
    const raw = req.rawHeaders;
    for (let i = 0; i + 1 < raw.length; i += 2) {
      const name = raw[i]!;
      if (HOP_REQUEST.has(name.toLowerCase())) continue;
      const prev = headers[name];
      headers[name] = prev === undefined ? raw[i + 1]! : ([] as string[]).concat(prev, raw[i + 1]!);
    }
    headers['Proxy-Authorization'] = auth;
    headers['Connection'] = 'close';
    const badGateway = (): void => {
      if (!res.headersSent) {
        res.writeHead(502, { 'content-length': '0', connection: 'close' });
        res.end();
      } else {
        res.destroy();
      }
    };
    connectGuard(() => dial(auth), current(), track).then((socket) => {
      if (res.destroyed) return void socket.destroy();
      const upstream = http.request({ createConnection: () => socket, method: req.method, path: req.url, headers, setHost: false });
      upstream.on('response', (answer) => {
        const out: string[] = [];
        const rawOut = answer.rawHeaders;
        for (let i = 0; i + 1 < rawOut.length; i += 2) {
          if (!HOP_RESPONSE.has(rawOut[i]!.toLowerCase())) out.push(rawOut[i]!, rawOut[i + 1]!);
        }
        res.writeHead(answer.statusCode ?? 502, out);
        answer.pipe(res);
        answer.on('error', () => res.destroy());
      });
      res.on('error', () => upstream.destroy());
      upstream.on('error', badGateway);
      req.pipe(upstream);
    }, badGateway);
  });

  server.on('connection', (socket: net.Socket) => {
    track(socket);
  });

  server.on('connect', (req, client: net.Socket, head: Buffer) => {
    const auth = authorization;
    const target = req.url ?? '';
    if (auth === undefined || !/^[^\s/@]+:\d{1,5}$/.test(target)) {
      client.end(REFUSAL);
      return;
    }
    if (tunnels >= maxOpen) {
      client.end(TOO_MANY);
      return;
    }
    // Nothing is read from the browser until the guard is reached; the pipe below resumes it.
    client.pause();
    connectGuard(() => dial(auth), current(), track).then((upstream) => {
      if (client.destroyed) return void upstream.destroy();
      const fail = (): void => {
        if (client.writable && upstream.bytesRead === 0) client.end(BAD_GATEWAY);
        else client.destroy();
        upstream.destroy();
      };
      upstream.on('error', fail);
      client.on('error', () => upstream.destroy());
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
      // The guard's answer opens the tunnel or not: an open one holds a place until it closes.
      upstream.once('data', (first: Buffer) => {
        if (!first.subarray(0, 13).toString('latin1').startsWith('HTTP/1.1 200 ') || client.destroyed) return;
        tunnels += 1;
        client.once('close', () => (tunnels -= 1));
      });
      upstream.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\nProxy-Authorization: ${auth}\r\n\r\n`);
      if (head.length > 0) upstream.write(head);
      // The guard's answer (200 or a 403 with its reason) reaches the browser unchanged.
      upstream.pipe(client);
      client.pipe(upstream);
    }, () => {
      if (client.writable) client.end(BAD_GATEWAY);
      else client.destroy();
    });
  });

  // Chromium tunnels WebSockets with CONNECT; a plain upgrade through the proxy is refused.
  server.on('upgrade', (_req, socket: net.Socket) => socket.end(REFUSAL));

  return {
    server,
    setAuthorization(value) {
      authorization = value;
      naming += 1;
      for (const socket of open) socket.destroy();
      open.clear();
    },
  };
}
