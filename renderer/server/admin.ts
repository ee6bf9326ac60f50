/**
 * The admin listener (its own port, never the public one): `/healthz/live` answers 200 while the
 * process runs; `/healthz/ready` 503 until the pool's start-up self-test has passed (README,
 * "Start-up self-test"); `/metrics` the Prometheus text; `/state` the slots and guard as the
 * operator reads them (lib/state-contract.ts).
 */
import http from 'node:http';
import { PROMETHEUS_CONTENT_TYPE, type Registry } from '../../lib/metrics.ts';
import { STATE_PATH, type RendererStateReport } from '../../lib/state-contract.ts';

export function adminHandler(registry: Registry, ready: () => boolean, state?: () => RendererStateReport): http.RequestListener {
  return (req, res) => {
    const path = (req.url ?? '/').split('?', 1)[0];
    const json = (status: number, body: object): void => {
      res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
      res.end(JSON.stringify(body));
    };
    if (req.method !== 'GET' && req.method !== 'HEAD') return json(405, { error: 'method_not_allowed' });
    if (path === '/healthz/live') return json(200, { live: true });
    if (path === '/healthz/ready') return ready() ? json(200, { ready: true }) : json(503, { ready: false });
    if (path === STATE_PATH && state !== undefined) return json(200, state());
    if (path === '/metrics') {
      res.writeHead(200, { 'content-type': PROMETHEUS_CONTENT_TYPE });
      res.end(registry.render());
      return;
    }
    json(404, { error: 'not_found' });
  };
}
