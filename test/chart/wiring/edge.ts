/**
 * Envoy's stand-in in the chart's wiring test (Envoy cannot run here): the embedded edge
 * (envoy/edge/) configured from the bootstrap the chart renders, read from the path the Envoy
 * Deployment gives (`--config-path`), under the directory where the test projected its
 * ConfigMap volumes. From the bootstrap: the public listener's port and request timeouts, the
 * connection bound, the body limit (buffer filter), ext_authz (its cluster, timeout and path
 * prefix), the route timeout and the renderer cluster, the OpenAPI document's file, and the ops
 * listener's port. Clusters are STRICT_DNS: the renderer cluster's Service name is re-resolved
 * to every address it has at the bootstrap's refresh rate, each host health-checked on its
 * `health_check_config` port at the bootstrap's interval, as Envoy does, so the edge follows a
 * rollout's pods; ext_authz goes to policy's name, resolved per connection. No TLS: the
 * embedded edge speaks plain HTTP on the public port.
 *
 * Usage: edge.ts <projected volumes root> <the Envoy container's arguments…>
 * Prints `edge.ready` once it listens and every cluster has a healthy host.
 */
import { lookup } from 'node:dns/promises';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { parse } from 'yaml';
import { createEdge } from '../../../envoy/edge/edge.ts';
import { createAdminServer } from '../../../lib/admin.ts';
import { createLogger } from '../../../lib/log.ts';
import { Registry } from '../../../lib/metrics.ts';
import { EXT_AUTHZ_PREFIX } from '../../../lib/policy-contract.ts';
import type { HostAddress } from '../../../envoy/edge/hosts.ts';
import { rendererCluster } from '../rollout/renderer-cluster.ts';

/* eslint-disable @typescript-eslint/no-explicit-any */

const [root, ...args] = process.argv.slice(2);
const configArg = args.indexOf('--config-path');
if (root === undefined || configArg < 0) throw new Error('usage: edge.ts <root> … --config-path <file> …');
const inRoot = (p: string): string => path.join(root, p);
const boot = parse(readFileSync(inRoot(args[configArg + 1]!), 'utf8'));

/** Envoy durations as the bootstrap writes them (`2s`, `0.25s`) in milliseconds. */
function ms(d: string): number {
  const m = /^(\d+(?:\.\d+)?)s$/.exec(d);
  if (m === null) throw new Error(`a duration this stand-in does not read: ${d}`);
  return Math.round(Number(m[1]) * 1000);
}

const listener = (name: string): any => boot.static_resources.listeners.find((l: any) => l.name === name);
const cluster = (name: string): any => boot.static_resources.clusters.find((c: any) => c.name === name);
const hcm = (l: any): any => l.filter_chains[0].filters.find((f: any) => f.name === 'envoy.filters.network.http_connection_manager').typed_config;
const pub = hcm(listener('public'));
const filter = (name: string): any => pub.http_filters.find((f: any) => f.name === name).typed_config;
const authz = filter('envoy.filters.http.ext_authz').http_service;
if (authz.path_prefix !== EXT_AUTHZ_PREFIX) throw new Error(`ext_authz path_prefix ${authz.path_prefix}: the embedded edge sends ${EXT_AUTHZ_PREFIX}`);
const routes: any[] = pub.route_config.virtual_hosts[0].routes;
const routed = routes.filter((r) => r.route !== undefined);
const routeClusters = new Set(routed.map((r) => r.route.cluster));
const timeouts = new Set(routed.map((r) => r.route.timeout));
if (routeClusters.size !== 1 || timeouts.size !== 1) throw new Error('every routed path goes to one cluster with one timeout in this stand-in');
const openapiRoute = routes.find((r) => r.direct_response?.status === 200 && r.direct_response.body?.filename !== undefined);
const maxConnections = boot.overload_manager.resource_monitors
  .find((m: any) => m.name === 'envoy.resource_monitors.global_downstream_max_connections').typed_config.max_active_downstream_connections;

/** Every address a STRICT_DNS cluster's endpoints resolve to now, each with its health check's URL. */
async function resolveCluster(name: string): Promise<HostAddress[]> {
  const c = cluster(name);
  if (c.type !== 'STRICT_DNS') throw new Error(`${name}: ${c.type}: this stand-in resolves STRICT_DNS clusters only`);
  const path = c.health_checks[0].http_health_check.path;
  const out: HostAddress[] = [];
  for (const e of c.load_assignment.endpoints.flatMap((x: any) => x.lb_endpoints)) {
    const sa = e.endpoint.address.socket_address;
    const hcPort = e.endpoint.health_check_config?.port_value ?? sa.port_value;
    for (const a of await lookup(sa.address, { all: true, family: 4 }).catch(() => [])) {
      out.push({ url: `http://${a.address}:${sa.port_value}`, healthUrl: `http://${a.address}:${hcPort}${path}` });
    }
  }
  return out;
}

function check(url: string, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const req = http.get(url, { timeout: timeoutMs, agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.once('timeout', () => req.destroy());
    req.once('error', () => resolve(false));
  });
}

async function main(): Promise<void> {
  const rendererName = [...routeClusters][0];
  if (rendererName !== 'renderer') throw new Error(`routes go to ${rendererName}: this stand-in routes to the renderer cluster`);
  // Envoy's renderer cluster: the name re-resolved at its refresh rate, hosts health-checked,
  // a host gone from the answer dropped at once (test/chart/rollout/renderer-cluster.ts).
  const renderers = rendererCluster(boot, () => resolveCluster(rendererName), { refreshing: true });
  const policyName = authz.server_uri.cluster;
  const policyCheck = cluster(policyName).health_checks[0];
  const policySocket = cluster(policyName).load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address;
  const registry = new Registry();
  const edge = createEdge({
    // The name, resolved per connection as the Service's DNS gives it.
    policyUrl: `http://${policySocket.address}:${policySocket.port_value}`,
    rendererUrls: renderers.hosts,
    host: listener('public').address.socket_address.address,
    port: listener('public').address.socket_address.port_value,
    openapi: readFileSync(inRoot(openapiRoute.direct_response.body.filename)),
    maxBodyBytes: filter('envoy.filters.http.buffer').max_request_bytes,
    authzTimeoutMs: ms(authz.server_uri.timeout),
    // The route timeout is the whole wait for a renderer's answer.
    renderTimeoutMs: ms([...timeouts][0]),
    upstreamMarginMs: 0,
    headersTimeoutMs: ms(pub.request_headers_timeout),
    bodyTimeoutMs: ms(pub.request_timeout),
    idleTimeoutMs: ms(pub.common_http_protocol_options.idle_timeout),
    maxConnections,
    logger: createLogger('edge'),
    metrics: registry,
  });
  const admin = createAdminServer({
    host: listener('ops').address.socket_address.address,
    port: listener('ops').address.socket_address.port_value,
    registries: [registry],
    ready: () => edge.healthy(),
  });
  await admin.start();
  await edge.start();
  // Ready once a host of each cluster passed its health check (policy's checked here, as only
  // this announcement needs them: its checks go to the name, resolved per connection).
  const round = async (): Promise<boolean> => {
    const policy = await Promise.all((await resolveCluster(policyName)).map((h) => check(h.healthUrl!, ms(policyCheck.timeout))));
    return policy.some(Boolean) && renderers.hosts.snapshot().some((h) => h.eligible);
  };
  while (!(await round())) await new Promise((r) => setTimeout(r, Math.min(ms(policyCheck.interval), renderers.timing.intervalMs)));
  process.stdout.write('edge.ready\n');
  const stop = async (): Promise<void> => {
    await edge.stop();
    await admin.stop();
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop());
  process.once('SIGINT', () => void stop());
}

main().catch((err: unknown) => {
  process.stderr.write(`edge stand-in failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
