/**
 * Envoy's `renderer` cluster as the chart's files/envoy.yaml configures it, for the embedded
 * edge (envoy/edge/hosts.ts): the headless Service's name re-resolved (STRICT_DNS; the refresh is
 * the caller's to place, at most `dns_refresh_rate` after an endpoints change), health checks on each
 * pod's admin port at the rendered interval, timeout and thresholds, new hosts only after their
 * first check, and removed hosts dropped while healthy. Refuses a bootstrap that lacks any of
 * these, so the run cannot pass on a cluster the chart no longer renders. A process standing for
 * Envoy (wiring/edge.ts) asks for the refresh to run on its own, every `dns_refresh_rate`.
 */
import { resolvedHosts, type HostAddress, type ResolvedHosts } from '../../../envoy/edge/hosts.ts';

/* eslint-disable @typescript-eslint/no-explicit-any */

/** Envoy's proto3 durations in ms ("5s", "0.25s"). */
const ms = (d: string): number => Math.round(parseFloat(d) * 1000);

export interface RendererCluster {
  hosts: ResolvedHosts;
  timing: { refreshMs: number; intervalMs: number; unhealthy: number };
  /** ext_authz's timeout, for the edge's check. */
  authzTimeoutMs: number;
}

export function rendererCluster(bootstrap: any, resolve: () => readonly HostAddress[] | Promise<readonly HostAddress[]>, o: { refreshing?: boolean } = {}): RendererCluster {
  const c = bootstrap.static_resources.clusters.find((x: any) => x.name === 'renderer');
  if (c.type !== 'STRICT_DNS') throw new Error(`the renderer cluster is ${c.type}, not STRICT_DNS`);
  if (c.ignore_health_on_host_removal !== true) throw new Error('the renderer cluster keeps removed hosts while healthy');
  const hc = c.health_checks[0];
  if (hc.http_health_check.path !== '/healthz/ready') throw new Error(`health checked at ${hc.http_health_check.path}`);
  if (c.common_lb_config.healthy_panic_threshold.value !== 0) throw new Error('the renderer cluster routes to unhealthy hosts in panic');
  const authz = bootstrap.static_resources.listeners[0].filter_chains[0].filters[0].typed_config.http_filters
    .find((f: any) => f.name === 'envoy.filters.http.ext_authz').typed_config;
  const timing = { refreshMs: ms(c.dns_refresh_rate), intervalMs: ms(hc.interval), unhealthy: hc.unhealthy_threshold as number };
  const hosts = resolvedHosts({
    resolve,
    ...(o.refreshing === true ? { refreshMs: timing.refreshMs } : {}),
    healthCheck: { intervalMs: timing.intervalMs, timeoutMs: ms(hc.timeout), unhealthyThreshold: timing.unhealthy, healthyThreshold: hc.healthy_threshold },
    ignoreNewHostsUntilFirstHc: c.common_lb_config.ignore_new_hosts_until_first_hc === true,
  });
  return { hosts, timing, authzTimeoutMs: ms(authz.http_service.server_uri.timeout) };
}
