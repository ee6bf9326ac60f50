/**
 * Policy's admin listener, on its own port (TINTYPE_ADMIN_PORT, 9081) like every role's:
 * `/metrics`, `/healthz/live`, `/healthz/ready` and the usage report (`GET /usage`). The report
 * is served here only, never on the port Envoy and the renderers reach (8081): it names every
 * key and what it used. For `tintype start` the usage route joins the one admin listener.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Lifecycle } from '../lib/lifecycle.ts';
import { listen } from '../lib/listen.ts';
import { PROMETHEUS_CONTENT_TYPE, type Registry } from '../lib/metrics.ts';
import { USAGE_PATH } from './usage-http.ts';

export const POLICY_ADMIN_PORT = 9081;

export interface PolicyAdminOptions {
  host: string;
  port: number;
  registry: Registry;
  /** Readiness: policy started and its store answers. */
  ready: () => Promise<boolean>;
  /** Answers GET /usage (usage-http.ts). */
  usage: http.RequestListener;
}

export interface PolicyAdmin extends Lifecycle {
  address(): { port: number };
}

export function createPolicyAdmin(o: PolicyAdminOptions): PolicyAdmin {
  const json = (res: http.ServerResponse, status: number, body: object): void => {
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
    res.end(JSON.stringify(body));
  };
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?', 1)[0];
    if (path === USAGE_PATH) return o.usage(req, res);
    req.resume();
    if (req.method !== 'GET' && req.method !== 'HEAD') return json(res, 405, { error: 'method_not_allowed' });
    if (path === '/healthz/live') return json(res, 200, { status: 'ok' });
    if (path === '/healthz/ready') {
      void o.ready().catch(() => false).then((ok) => json(res, ok ? 200 : 503, { status: ok ? 'ready' : 'unavailable' }));
      return;
    }
    if (path === '/metrics') {
      res.writeHead(200, { 'content-type': PROMETHEUS_CONTENT_TYPE });
      res.end(o.registry.render());
      return;
    }
    json(res, 404, { error: 'not_found' });
  });
  let listening = false;
  return {
    async start() {
      await listen(server, { port: o.port, host: o.host });
      listening = true;
    },
    async stop() {
      if (!listening) return;
      listening = false;
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
    healthy: () => listening,
    address: () => ({ port: (server.address() as AddressInfo).port }),
  };
}
