/**
 * Envoy cannot run here: this stands in for the part of it a drain talks to, as Envoy's admin
 * documentation describes it (operations/admin "drain_listeners", "healthcheck/fail" and "ready",
 * arch_overview "Draining", the --drain-time-s and --drain-strategy options):
 * - `POST /healthcheck/fail`: the server fails its health checks: `GET /ready` answers 503
 *   `DRAINING` (200 `LIVE` before), and a listener of the default drain type drain-closes: every
 *   HTTP/1 answer carries `connection: close`. Serving goes on.
 * - `POST /drain_listeners?graceful`: a graceful drain for the drain time. With the `immediate`
 *   strategy every request is discouraged from the start: HTTP/1 answers carry `connection: close`
 *   (HTTP/2 would get GOAWAY). New connections are still accepted until the drain time is over;
 *   then the listeners close and, without `skip_exit`, Envoy exits. Without `graceful`, the
 *   listeners stop at once. Any method but POST is refused (405), as Envoy's mutating endpoints.
 * - `GET /stats?filter=<regex>`: `name: value` lines of the stats whose names match; here the
 *   public listener's requests in flight, `http.public.downstream_rq_active`, and open
 *   connections, `http.public.downstream_cx_active`.
 * - SIGTERM (`terminate()`): Envoy exits at once, resetting whatever is in flight.
 * Its public listener answers `GET /?ms=N` with 200 after N ms, as an upstream would.
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { ACTIVE_REQUESTS_STAT, OPEN_CONNECTIONS_STAT } from '../../envoy/drain.ts';

export interface EnvoyStandIn {
  publicPort: number;
  adminUrl: string;
  /** Requests answered, and requests cut by termination. */
  answered: number;
  cut: number;
  /** When the graceful drain began, and when health checks began to fail (undefined: never). */
  drainStartedAt: number | undefined;
  unreadyAt: number | undefined;
  /** Whether it exited by itself at the end of a graceful drain's time. */
  exitedByItself: boolean;
  openConnections(): number;
  inFlight(): number;
  /** SIGTERM: exits at once. */
  terminate(): void;
  closed: Promise<void>;
}

export async function startEnvoyStandIn(drainTimeMs: number): Promise<EnvoyStandIn> {
  let active = 0;
  let draining = false;
  let exited = false;
  const sockets = new Set<Socket>();
  const pub = http.createServer((req, res) => {
    active++;
    const ms = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('ms') ?? '0');
    const timer = setTimeout(() => {
      active--;
      s.answered++;
      // The immediate strategy: from the drain's start every answer asks the client to leave.
      if (draining || s.unreadyAt !== undefined) res.setHeader('connection', 'close');
      res.end('ok');
    }, ms);
    res.once('close', () => {
      if (!res.writableFinished) {
        clearTimeout(timer);
        active--;
        s.cut++;
      }
    });
  });
  pub.keepAliveTimeout = 60_000;
  pub.on('connection', (c) => {
    sockets.add(c);
    c.once('close', () => sockets.delete(c));
  });
  let closedResolve!: () => void;
  const closed = new Promise<void>((r) => (closedResolve = r));
  const exit = (): void => {
    if (exited) return;
    exited = true;
    pub.close();
    for (const c of sockets) c.destroy();
    admin.close();
    admin.closeAllConnections();
    closedResolve();
  };
  const admin = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/drain_listeners') {
      if (req.method !== 'POST') return res.writeHead(405).end('This endpoint requires POST\n');
      if (url.searchParams.has('graceful')) {
        if (!draining) {
          draining = true;
          s.drainStartedAt = Date.now();
          setTimeout(() => {
            if (url.searchParams.has('skip_exit')) return void pub.close();
            if (!exited) s.exitedByItself = true;
            exit();
          }, drainTimeMs);
        }
      } else {
        pub.close();
      }
      return res.end('OK\n');
    }
    if (url.pathname === '/healthcheck/fail') {
      if (req.method !== 'POST') return res.writeHead(405).end('This endpoint requires POST\n');
      s.unreadyAt ??= Date.now();
      return res.end('OK\n');
    }
    if (url.pathname === '/ready' && req.method === 'GET') {
      return s.unreadyAt === undefined && !draining ? res.end('LIVE\n') : res.writeHead(503).end('DRAINING\n');
    }
    if (url.pathname === '/stats' && req.method === 'GET') {
      const filter = new RegExp(url.searchParams.get('filter') ?? '');
      const stats: Record<string, number> = { [ACTIVE_REQUESTS_STAT]: active, [OPEN_CONNECTIONS_STAT]: sockets.size, 'listener_manager.total_listeners_draining': draining ? 1 : 0 };
      return res.end(Object.entries(stats).filter(([k]) => filter.test(k)).map(([k, v]) => `${k}: ${v}\n`).join(''));
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => pub.listen(0, '127.0.0.1', r));
  await new Promise<void>((r) => admin.listen(0, '127.0.0.1', r));
  const s: EnvoyStandIn = {
    publicPort: (pub.address() as AddressInfo).port,
    adminUrl: `http://127.0.0.1:${(admin.address() as AddressInfo).port}`,
    answered: 0,
    cut: 0,
    drainStartedAt: undefined,
    unreadyAt: undefined,
    exitedByItself: false,
    inFlight: () => active,
    openConnections: () => sockets.size,
    terminate: exit,
    closed,
  };
  return s;
}
