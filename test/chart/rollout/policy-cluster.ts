/**
 * How the cluster reaches policy pods, for the chart's rolling-restart run: the headless Service's
 * DNS (the pods in its endpoints: a pod leaves them when it is deleted, its successor joins once
 * ready) re-read at the bootstrap's refresh rate, and Envoy's `policy` cluster over it, as
 * files/envoy.yaml configures it: active health checks on each host's admin port (interval,
 * timeout, unhealthy and healthy thresholds), a host gone from the DNS answer dropped at once even
 * while healthy (ignore_health_on_host_removal), least request among the healthy hosts, and
 * ext_authz's own rules: its timeout, and `status_on_error` 503 for an error or a 5xx, which the
 * local reply mapper answers as the spec's 503 busy with retry-after. The renderers' settles
 * resolve the same DNS name per connection (no health checks). The DNS refresh is the caller's
 * to run (`refresh()`), so a test can put it where Envoy's interval allows it to fall.
 */
import http from 'node:http';
import { SETTLE_PATH } from '../../../lib/policy-contract.ts';
import type { Answer } from './traffic.ts';

/* eslint-disable @typescript-eslint/no-explicit-any */

export interface PolicyPod {
  name: string;
  /** ext_authz, Envoy's listener. */
  port: number;
  /** claim, release and settle: the renderers' listener. */
  settlePort: number;
  adminPort: number;
}

interface Host extends PolicyPod { healthy: boolean; fails: number; active: number }


/** Envoy's proto3 durations in ms ("5s", "0.25s"); Envoy's default DNS refresh is 5 s. */
const ms = (d: string | undefined, fallback: number): number => d === undefined ? fallback : Math.round(parseFloat(d) * 1000);

export function policyCluster(bootstrap: any) {
  const c = bootstrap.static_resources.clusters.find((x: any) => x.name === 'policy');
  const authz = bootstrap.static_resources.listeners[0].filter_chains[0].filters[0].typed_config.http_filters
    .find((f: any) => f.name === 'envoy.filters.http.ext_authz').typed_config;
  if (c.ignore_health_on_host_removal !== true) throw new Error('the policy cluster keeps removed hosts while healthy');
  const hc = c.health_checks[0];
  const timing = {
    refreshMs: ms(c.dns_refresh_rate, 5_000), intervalMs: ms(hc.interval, 5_000), hcTimeoutMs: ms(hc.timeout, 1_000),
    unhealthy: hc.unhealthy_threshold as number, healthy: hc.healthy_threshold as number,
    authzTimeoutMs: ms(authz.http_service.server_uri.timeout, 200), path: hc.http_health_check.path as string,
  };
  /** The Service's endpoints now, and what Envoy last resolved. */
  const endpoints = new Map<string, PolicyPod>();
  const hosts = new Map<string, Host>();
  const agent = new http.Agent({ keepAlive: true });
  const settleAgent = new http.Agent({ keepAlive: true });

  const refresh = (): void => {
    for (const name of hosts.keys()) if (!endpoints.has(name)) hosts.delete(name);
    for (const [name, pod] of endpoints) {
      // A new host waits for its first check before it takes traffic (ignore_new_hosts_until_first_hc is
      // the renderer cluster's; policy's new hosts start healthy, as Envoy's do without it).
      if (!hosts.has(name)) hosts.set(name, { ...pod, healthy: true, fails: 0, active: 0 });
    }
  };
  const check = (h: Host): Promise<void> => new Promise((resolve) => {
    const done = (ok: boolean): void => {
      if (ok) { h.fails = 0; h.healthy = true; } else if (++h.fails >= timing.unhealthy) h.healthy = false;
      resolve();
    };
    const req = http.get({ host: '127.0.0.1', port: h.adminPort, path: timing.path, agent: false, timeout: timing.hcTimeoutMs }, (res) => {
      res.resume();
      done(res.statusCode === 200);
    });
    req.once('timeout', () => req.destroy());
    req.once('error', () => done(false));
  });
  const timers = [setInterval(() => { for (const h of hosts.values()) void check(h); }, timing.intervalMs)];

  const send = (port: number, o: { method: string; path: string; headers: Record<string, string>; body?: string }, a: http.Agent, timeoutMs: number): Promise<Answer> =>
    new Promise((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port, method: o.method, path: o.path, headers: o.headers, agent: a, timeout: timeoutMs }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString('utf8')));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
        res.on('error', reject);
      });
      req.once('timeout', () => req.destroy(new Error('timeout')));
      req.once('error', reject);
      req.end(o.body);
    });
  const busy = (): Answer => ({ status: 503, headers: { 'retry-after': '1', 'content-type': 'application/json' }, body: '{"error":"busy"}' });

  return {
    timing,
    /** The endpoints controller: a pod joins once ready, leaves when deleted. */
    join(pod: PolicyPod): void {
      endpoints.set(pod.name, pod);
    },
    leave(name: string): void {
      endpoints.delete(name);
    },
    /** Envoy re-resolving the Service's name (every `timing.refreshMs`). */
    refresh,
    /** ext_authz through Envoy's policy cluster: policy's answer, or 503 busy on an error. */
    async check(path: string, authorization: string): Promise<Answer> {
      const healthy = [...hosts.values()].filter((h) => h.healthy);
      if (healthy.length === 0) return busy();
      const h = healthy.reduce((a, b) => (b.active < a.active ? b : a));
      h.active++;
      try {
        const r = await send(h.port, { method: 'GET', path: `${authz.http_service.path_prefix}${path}`, headers: { authorization } }, agent, timing.authzTimeoutMs);
        return r.status >= 500 ? busy() : { ...r, host: h.name };
      } catch {
        return busy();
      } finally {
        h.active--;
      }
    },
    /** A renderer's settle, to a pod the Service's name resolves to now, with the renderer's `headers` (its token). */
    async settle(body: string, headers: Record<string, string> = {}): Promise<Answer> {
      const pods = [...endpoints.values()];
      const pod = pods[Math.floor(Math.random() * pods.length)]!;
      return { ...(await send(pod.settlePort, { method: 'POST', path: SETTLE_PATH, headers: { ...headers, 'content-type': 'application/json' }, body }, settleAgent, 10_000)), host: pod.name };
    },
    close(): void {
      for (const t of timers) clearInterval(t);
      agent.destroy();
      settleAgent.destroy();
    },
  };
}
