/**
 * The admin listener: Prometheus metrics and the health probes, on their own port and never
 * on the public one. One admin listener can serve the registries of several roles.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { PROMETHEUS_CONTENT_TYPE, type Registry } from '../../lib/metrics.ts';
import type { Lifecycle } from '../../lib/lifecycle.ts';
import { listen } from '../../lib/listen.ts';

export interface AdminOptions {
  host?: string;
  port?: number;
  registries: readonly Registry[];
  /** Readiness: every role started and healthy. Liveness is the process answering. */
  ready: () => boolean;
  /** Further admin-only paths and their handlers (policy's `/usage` in `tintype start`). */
  routes?: Readonly<Record<string, http.RequestListener>>;
}

export interface AdminServer extends Lifecycle {
  port(): number;
}

export function createAdminServer(options: AdminOptions): AdminServer {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?', 1)[0]!;
    const route = options.routes !== undefined && Object.hasOwn(options.routes, path) ? options.routes[path] : undefined;
    if (route !== undefined) return route(req, res);
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET' }).end();
      return;
    }
    if (path === '/metrics') {
      res.writeHead(200, { 'content-type': PROMETHEUS_CONTENT_TYPE });
      res.end(options.registries.map((r) => r.render()).join(''));
    } else if (path === '/healthz/live') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
    } else if (path === '/healthz/ready') {
      const ok = options.ready();
      res.writeHead(ok ? 200 : 503, { 'content-type': 'text/plain' }).end(ok ? 'ready\n' : 'not ready\n');
    } else {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
    }
  });
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
