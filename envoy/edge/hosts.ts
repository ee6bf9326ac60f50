/**
 * The renderers the edge routes to, as Envoy's `renderer` cluster holds them
 * (charts/tintype/files/envoy.yaml: STRICT_DNS over the headless Service, active health checks on
 * each pod's admin port, `ignore_health_on_host_removal`, `ignore_new_hosts_until_first_hc`,
 * a healthy panic threshold of 0, LEAST_REQUEST). Either a fixed list (`tintype start`, one
 * renderer in the process) or a list re-resolved: a host that leaves the answer is dropped at once,
 * even while healthy, so no new request goes to a pod being deleted; a new host takes requests
 * only once its first health check passed; a host whose health check fails `unhealthyThreshold`
 * times in a row takes no new request until one passes again (docs/helm.md "Rolling restarts").
 */
import http from 'node:http';

/** One renderer: its HTTP server, and where its readiness is checked (its admin port). */
export interface HostAddress {
  url: string;
  healthUrl?: string;
}

export interface RendererHost {
  /** The HTTP server's URL, also the host's identity. */
  readonly key: string;
  readonly url: URL;
  /** Requests routed to it and not yet answered (LEAST_REQUEST's measure). */
  active: number;
}

export interface RendererHosts {
  /** A host for a new request, least busy first, avoiding `tried` when another is there (Envoy's previous_hosts); none when no host may take one. */
  pick(tried: ReadonlySet<string>): RendererHost | undefined;
  /** Whether a host other than those `tried` may take a request now (a retry can follow). */
  another(tried: ReadonlySet<string>): boolean;
  start(): Promise<void>;
  close(): void;
}

/**
 * The least busy host, a tie broken at random. Envoy's LEAST_REQUEST over hosts of equal weight
 * draws two at random and takes the less busy: no host is preferred for its place in the DNS
 * answer. Taking always the first of the idle ones would starve a new pod under light traffic.
 */
function leastActive(hosts: RendererHost[], tried: ReadonlySet<string>): RendererHost | undefined {
  const fresh = hosts.filter((h) => !tried.has(h.key));
  const from = fresh.length > 0 ? fresh : hosts;
  const fewest = Math.min(...from.map((h) => h.active));
  const least = from.filter((h) => h.active === fewest);
  return least[Math.floor(Math.random() * least.length)];
}

/** A fixed list of renderers, always taken (the edge of `tintype start` and the tests of one edge). */
export function fixedHosts(urls: readonly string[]): RendererHosts {
  if (urls.length === 0) throw new Error('no renderer to route to');
  const hosts: RendererHost[] = urls.map((u) => ({ key: u, url: new URL(u), active: 0 }));
  let next = 0;
  return {
    // In turn, as before: a fixed list is a test's or one process's, where order is what is asked.
    // A retry takes the one after the host last tried.
    pick(tried) {
      if (tried.size === 0) {
        const h = hosts[next]!;
        next = (next + 1) % hosts.length;
        return h;
      }
      const last = hosts.findIndex((h) => h.key === [...tried].at(-1));
      for (let i = 1; i <= hosts.length; i++) {
        const h = hosts[(last + i) % hosts.length]!;
        if (!tried.has(h.key)) return h;
      }
      return hosts[(last + 1) % hosts.length];
    },
    another: (tried) => hosts.some((h) => !tried.has(h.key)),
    start: async () => {},
    close: () => {},
  };
}

export interface ResolvedHostsOptions {
  /** The cluster's name resolved now (the headless Service's ready pods). */
  resolve: () => readonly HostAddress[] | Promise<readonly HostAddress[]>;
  /** `dns_refresh_rate`; omitted, the caller runs `refresh()` (a test placing it where the interval lets it fall). */
  refreshMs?: number;
  /** The cluster's active health check; omitted, every resolved host takes requests. */
  healthCheck?: { intervalMs: number; timeoutMs: number; unhealthyThreshold: number; healthyThreshold: number };
  /** `ignore_new_hosts_until_first_hc`: a new host waits for its first passing check. */
  ignoreNewHostsUntilFirstHc?: boolean;
}

interface Tracked extends RendererHost { address: HostAddress; healthy: boolean; fails: number; passes: number; checked: boolean }

export type ResolvedHosts = RendererHosts & {
  /** Re-resolves now: hosts gone from the answer are dropped even while healthy, new ones added. */
  refresh(): Promise<void>;
  /** Runs one round of health checks now. */
  check(): Promise<void>;
  /** The hosts held now, and whether each may take a request. */
  snapshot(): Array<{ key: string; eligible: boolean }>;
};

/** Renderers behind a name re-resolved as Envoy's STRICT_DNS cluster does, with its health checks. */
export function resolvedHosts(options: ResolvedHostsOptions): ResolvedHosts {
  const hosts = new Map<string, Tracked>();
  const timers: NodeJS.Timeout[] = [];
  const hc = options.healthCheck;
  const eligible = (h: Tracked): boolean => h.healthy && (h.checked || options.ignoreNewHostsUntilFirstHc !== true || hc === undefined);
  const candidates = (): Tracked[] => [...hosts.values()].filter(eligible);

  async function refresh(): Promise<void> {
    const answer = await options.resolve();
    const now = new Map(answer.map((a) => [a.url, a]));
    // ignore_health_on_host_removal: gone from the answer is gone, healthy or not.
    for (const key of hosts.keys()) if (!now.has(key)) hosts.delete(key);
    const added: Tracked[] = [];
    for (const [key, address] of now) {
      if (hosts.has(key)) continue;
      const h: Tracked = { key, url: new URL(key), address, active: 0, healthy: true, fails: 0, passes: 0, checked: false };
      hosts.set(key, h);
      added.push(h);
    }
    // Envoy's health checker opens a session for a host as it is added, its first check at once.
    await Promise.all(added.map(checkOne));
  }

  function checkOne(h: Tracked): Promise<void> {
    if (hc === undefined || h.address.healthUrl === undefined) return Promise.resolve();
    return new Promise((resolve) => {
      let done = false;
      const result = (ok: boolean): void => {
        if (done) return;
        done = true;
        if (ok) {
          h.fails = 0;
          h.passes += 1;
          // A new host is healthy at its first pass; a host marked unhealthy needs the threshold.
          if (!h.checked || h.passes >= hc.healthyThreshold) h.healthy = true;
        } else {
          h.passes = 0;
          h.fails += 1;
          if (!h.checked || h.fails >= hc.unhealthyThreshold) h.healthy = false;
        }
        h.checked = true;
        resolve();
      };
      const req = http.get(h.address.healthUrl!, { agent: false, timeout: hc.timeoutMs }, (res) => {
        res.resume();
        result(res.statusCode === 200);
      });
      req.once('timeout', () => req.destroy(new Error('health check timed out')));
      req.once('error', () => result(false));
    });
  }

  async function check(): Promise<void> {
    await Promise.all([...hosts.values()].map(checkOne));
  }

  return {
    pick: (tried) => leastActive(candidates(), tried),
    another: (tried) => candidates().some((h) => !tried.has(h.key)),
    async start() {
      await refresh();
      await check();
      if (options.refreshMs !== undefined) timers.push(setInterval(() => void refresh().catch(() => {}), options.refreshMs));
      if (hc !== undefined) timers.push(setInterval(() => void check(), hc.intervalMs));
    },
    close() {
      for (const t of timers) clearInterval(t);
      timers.length = 0;
    },
    refresh,
    check,
    snapshot: () => [...hosts.values()].map((h) => ({ key: h.key, eligible: eligible(h) })),
  };
}
