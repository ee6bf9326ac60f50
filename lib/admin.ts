/**
 * The admin listener every role has, on its own port and never on the public one: `/metrics`
 * (Prometheus text), `/healthz/live` (200 while the process answers), `/healthz/ready` (200 once
 * the role is ready), `/healthz/drain` (a pod's preStop: readiness fails from then on, and the
 * answer comes after `wait_s` seconds in which the role keeps serving, so the endpoints and Envoy
 * let go of the pod before SIGTERM stops it), and the paths a role adds (the renderer's
 * `/state`, policy's `/usage`).
 * One listener can serve the registries of several roles (`tintype start`).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeBody, writeMethodNotAllowed, writeNotFound } from './answers.ts';
import { drain } from './body.ts';
import type { Lifecycle } from './lifecycle.ts';
import { listen } from './listen.ts';
import { PROMETHEUS_CONTENT_TYPE, type Registry } from './metrics.ts';

/**
 * The admin paths every role answers, named once: the chart's probes, Envoy's health checks and
 * the Prometheus scrape reach them from outside (charts/tintype/, test/chart/ and test/envoy/
 * hold the chart to these names).
 */
export const METRICS_PATH = '/metrics';
export const LIVE_PATH = '/healthz/live';
export const READY_PATH = '/healthz/ready';
/** The preStop hook's path (docs/helm.md, "Rolling restarts"): `GET /healthz/drain?wait_s=N`. */
export const DRAIN_PATH = '/healthz/drain';
/** The longest wait a drain may ask for: it must fit in the pod's grace period. */
export const MAX_DRAIN_WAIT_S = 300;

export interface AdminOptions {
  host?: string;
  port?: number;
  registries: readonly Registry[];
  /** Readiness: every role started and healthy. Liveness is the process answering. */
  ready: () => boolean | Promise<boolean>;
  /** Further admin-only GET paths and their handlers (`/state`, `/usage`). */
  routes?: Readonly<Record<string, http.RequestListener>>;
  /**
   * Called once, when a drain begins: the role's listeners start answering `connection: close`
   * (lib/graceful-close.ts `leave`), so kept-alive clients move to other pods before SIGTERM.
   */
  onDrain?: () => void;
}

export interface AdminServer extends Lifecycle {
  port(): number;
}

/** The admin listener's request handler, for a server a role makes itself. */
export function adminHandler(options: AdminOptions): http.RequestListener {
  // Once a drain began, the pod is on its way out: never ready again.
  let draining = false;
  return (req, res) => {
    const [path, query = ''] = (req.url ?? '/').split('?', 2) as [string, string?];
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
    } else if (path === DRAIN_PATH) {
      const raw = new URLSearchParams(query).get('wait_s') ?? '0';
      const waitS = /^\d{1,3}$/.test(raw) ? Number(raw) : NaN;
      if (!(waitS <= MAX_DRAIN_WAIT_S)) {
        return writeBody(res, 400, { error: 'bad_request', message: `wait_s: whole seconds, 0 to ${MAX_DRAIN_WAIT_S}` });
      }
      if (!draining) options.onDrain?.();
      draining = true;
      const timer = setTimeout(() => writeBody(res, 200, { draining: true, waitedS: waitS }), waitS * 1000);
      // A hook that gives up (the grace period ended) needs no answer.
      res.once('close', () => clearTimeout(timer));
    } else {
      writeNotFound(res);
    }
  };
}

export function createAdminServer(options: AdminOptions): AdminServer {
  const server = http.createServer(adminHandler(options));
  let listening = false;
  return {
    async start() {
      await listen(server, { port: options.port ?? 0, host: options.host ?? '127.0.0.1' });
      listening = true;
    },
    async stop() {
      if (!listening) return;
      listening = false;
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
    healthy: () => listening,
    port: () => (server.address() as AddressInfo).port,
  };
}
