/**
 * The admin listener every role has, on its own port and never on the public one: `/metrics`
 * (Prometheus text), `/healthz/live` (200 while the process answers), `/healthz/ready` (200 once
 * the role is ready, 503 from the start of a drain), and the paths a role adds (the renderer's
 * `/state`); beside it, optionally, a unix socket that answers the same and what only someone on
 * the host may read (policy's `/usage` and `/egress`). Every path only reads: a drain is begun by
 * the role's own SIGTERM (`drainAfterSignal`), never by a request, since whatever shares the
 * pod's network (the renderer's browser container) or may reach the port (docs/security.md)
 * could otherwise make the role unready for good.
 * One listener can serve the registries of several roles (`tintype start`).
 */
import { chmodSync, lstatSync, rmSync } from 'node:fs';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { writeBody, writeMethodNotAllowed, writeNotFound } from './answers.ts';
import { drain } from './body.ts';
import type { Lifecycle } from './lifecycle.ts';
import { listen } from './listen.ts';
import { PRIVATE_FILE_MODE } from './private-files.ts';
import type { Logger } from './log.ts';
import { PROMETHEUS_CONTENT_TYPE, type Registry } from './metrics.ts';

/**
 * The admin paths every role answers, named once: the chart's probes, Envoy's health checks and
 * the Prometheus scrape reach them from outside (charts/tintype/, test/chart/ and test/envoy/
 * hold the chart to these names).
 */
export const METRICS_PATH = '/metrics';
export const LIVE_PATH = '/healthz/live';
export const READY_PATH = '/healthz/ready';

/** The admin socket's name in the role's data directory (`AdminOptions.socket`). */
export const ADMIN_SOCKET_NAME = 'admin.sock';

export interface AdminOptions {
  host?: string;
  port?: number;
  registries: readonly Registry[];
  /** Readiness: every role started and healthy. Liveness is the process answering. */
  ready: () => boolean | Promise<boolean>;
  /** Further admin-only GET paths and their handlers (`/state`). */
  routes?: Readonly<Record<string, http.RequestListener>>;
  /**
   * A unix socket in the role's private data directory (0600) answering everything the port does
   * and `routes` besides: what only someone on the host, or in the container (`kubectl exec`), may
   * read (policy's `/usage` and `/egress`, docs/operations.md "Reading usage"). A peer's address
   * cannot say that: under a sidecar mesh every peer arrives from loopback.
   */
  socket?: { path: string; routes: Readonly<Record<string, http.RequestListener>> };
  /**
   * Told when another live process already answers on `socket.path` (two policy processes on one
   * data directory): this one then serves no socket, and that one answers for the store.
   */
  onSocketHeld?: (path: string) => void;
  /**
   * Called once, when a drain begins: the role's listeners start answering `connection: close`
   * (lib/graceful-close.ts `leave`), so kept-alive clients move to other pods before it stops.
   */
  onDrain?: () => void;
}

/** What begins a drain: readiness fails from then on, and the role is told once. */
export interface Drainable {
  drain(): void;
  draining(): boolean;
}

export interface AdminServer extends Lifecycle, Drainable {
  port(): number;
}

/** The admin listener's request handler, for a server a role makes itself, and its drain. */
export function adminHandler(options: AdminOptions): http.RequestListener & Drainable {
  // Once a drain began, the pod is on its way out: never ready again.
  let draining = false;
  const handler: http.RequestListener = (req, res) => {
    const path = (req.url ?? '/').split('?', 1)[0]!;
    drain(req);
    if (req.method !== 'GET' && req.method !== 'HEAD') return writeMethodNotAllowed(res, 'GET, HEAD');
    const route = options.routes !== undefined && Object.hasOwn(options.routes, path) ? options.routes[path] : undefined;
    if (route !== undefined) return route(req, res);
    if (path === METRICS_PATH) {
      res.writeHead(200, { 'content-type': PROMETHEUS_CONTENT_TYPE });
      res.end(options.registries.map((r) => r.render()).join(''));
    } else if (path === LIVE_PATH) {
      writeBody(res, 200, { live: true });
    } else if (path === READY_PATH) {
      if (draining) return writeBody(res, 503, { ready: false, draining: true });
      void Promise.resolve()
        .then(options.ready)
        .catch(() => false)
        .then((ok) => writeBody(res, ok ? 200 : 503, { ready: ok }));
    } else {
      writeNotFound(res);
    }
  };
  return Object.assign(handler, {
    drain() {
      if (!draining) options.onDrain?.();
      draining = true;
    },
    draining: () => draining,
  });
}

/**
 * After the stop signal, before the role stops: at SIGTERM (a pod's deletion) with a wait, the
 * role drains (readiness fails, kept-alive clients are sent elsewhere) and keeps serving for
 * `waitS` seconds while the endpoints and Envoy let go of the pod, then returns so the role stops
 * (docs/helm.md, "Rolling restarts"). SIGINT (a terminal), or a second signal during the wait,
 * stops at once. The drain always ends in the stop: nothing else begins one.
 */
export async function drainAfterSignal(signal: NodeJS.Signals, waitS: number, drains: readonly Drainable[], logger: Logger): Promise<void> {
  if (signal !== 'SIGTERM' || waitS === 0) return;
  for (const d of drains) d.drain();
  logger.info('draining', { wait_s: waitS });
  let timer: NodeJS.Timeout | undefined;
  let onSignal: (() => void) | undefined;
  await new Promise<void>((resolve) => {
    timer = setTimeout(resolve, waitS * 1000);
    onSignal = resolve;
    process.once('SIGTERM', onSignal).once('SIGINT', onSignal);
  });
  clearTimeout(timer);
  process.off('SIGTERM', onSignal!).off('SIGINT', onSignal!);
}

/**
 * Removes the socket at `path` when no process answers on it (one left by a process that was
 * killed would refuse the listen); one that answers is another process's, and is left alone.
 */
async function removeStaleSocket(path: string): Promise<void> {
  if (lstatSync(path, { throwIfNoEntry: false })?.isSocket() !== true) return;
  const answered = await new Promise<boolean>((resolve) => {
    const probe = net.connect({ path }, () => {
      probe.destroy();
      resolve(true);
    });
    probe.once('error', () => resolve(false));
  });
  if (!answered) rmSync(path, { force: true });
}

export function createAdminServer(options: AdminOptions): AdminServer {
  const handler = adminHandler(options);
  const server = http.createServer(handler);
  const socket = options.socket;
  // The socket's handler shares the port's drain, so both answer readiness alike.
  const local = socket === undefined ? undefined
    : http.createServer(adminHandler({ ...options, routes: { ...options.routes, ...socket.routes }, ready: () => !handler.draining() && options.ready() }));
  let listening = false;
  let socketServed = false;
  const close = async (s: http.Server): Promise<void> => {
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  };
  return {
    async start() {
      await listen(server, { port: options.port ?? 0, host: options.host ?? '127.0.0.1' });
      if (local !== undefined && socket !== undefined) {
        await removeStaleSocket(socket.path);
        try {
          await listen(local, { path: socket.path });
          chmodSync(socket.path, PRIVATE_FILE_MODE);
          socketServed = true;
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
          options.onSocketHeld?.(socket.path);
        }
      }
      listening = true;
    },
    async stop() {
      if (!listening) return;
      listening = false;
      await Promise.all([server, ...(local === undefined || !socketServed ? [] : [local])].map(close));
    },
    healthy: () => listening,
    drain: handler.drain,
    draining: handler.draining,
    port: () => (server.address() as AddressInfo).port,
  };
}
