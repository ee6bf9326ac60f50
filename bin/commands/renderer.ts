/**
 * `tintype renderer` (docs/architecture.md §1): the renderer server on PORT (8082) and its admin port,
 * Chromium in its own namespace, its own guard unless GUARD_URL names one, leases settled to
 * TINTYPE_POLICY_URL. Wiring only. SIGTERM/SIGINT: stop taking requests, let the ones in flight
 * finish inside the render budget, settle them, close Chromium, exit 0.
 *
 * The renderer serves only a lease policy signed (TINTYPE_LEASE_SECRET, checked before any work);
 * its port should still be reachable from the edge only: all interfaces here, because Envoy
 * reaches the pod by its address (the deployment's NetworkPolicy admits only the edge); loopback
 * inside `tintype start`.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadConfig, type Config } from '../../lib/config.ts';
import type { Lifecycle } from '../../lib/lifecycle.ts';
import { createLogger, type Logger } from '../../lib/log.ts';
import { Registry } from '../../lib/metrics.ts';
import { agentSettler, type Settler } from '../../lib/policy-contract.ts';
import { startTelemetry } from '../../lib/telemetry.ts';
import { createGuard, createJudge, guardSettings, judgeUrl, type Guard } from '../../guard/index.ts';
import { createBrowserPool, guardEndpointFromConfig, type GuardEndpoint } from '../../renderer/browser/index.ts';
import { createRenderCache } from '../../renderer/cache/index.ts';
import { createOgDrawer } from '../../renderer/og/index.ts';
import type { UrlJudge } from '../../renderer/operations/index.ts';
import { createRendererServer, type RendererServer } from '../../renderer/server/index.ts';
import { helpText, waitForStopSignal, type Command } from './command.ts';

/** A running renderer role: server, Chromium pool, OG threads, cache and (unless GUARD_URL) its own guard. */
export interface RendererRole extends Lifecycle {
  server: RendererServer;
  /** Ready for renders: healthy and the start-up self-test passed (spec Part 1; /healthz/ready). */
  ready(): boolean;
}

/** How `tintype start` embeds the role; `tintype renderer` uses the defaults. */
export interface RendererRoleOptions {
  registry?: Registry;
  /** Interface to listen on; all when omitted. `tintype start` passes 127.0.0.1: see the header. */
  host?: string;
  /** Start the role's own guard on a private unix socket even when GUARD_URL is set. */
  ownGuard?: boolean;
  /** Where leases settle; by default kept-alive HTTP to TINTYPE_POLICY_URL, closed with the role. */
  settler?: Settler;
  /** The ports of the rest of the process (`tintype start`): its own guard refuses them at loopback. */
  servicePorts?: () => Iterable<number>;
}

/** Where settles go: policy over kept-alive HTTP, or nowhere (logged once) when no policy is configured. */
function settlerFor(config: Readonly<Config>, logger: Logger): Settler & { close(): void } {
  // A settle follows every answer: node:http with a kept-alive agent, carrying the trace
  // context, costs a fraction of fetch per call (bench/edge.ts); the server retries twice.
  if (config.policyUrl !== undefined) return agentSettler(config.policyUrl);
  logger.warn('renderer.no_policy_url', { detail: 'TINTYPE_POLICY_URL is unset; leases are not settled' });
  return { settle: async () => {}, close: () => {} };
}

/**
 * Builds every part of the renderer from the settings, for `tintype renderer` and `tintype start`
 * alike. Stop order: server (in-flight renders finish, leases settle) ▸ pool (Chromium closed) ▸
 * OG threads ▸ cache ▸ guard ▸ settler.
 */
export async function createRendererRole(config: Readonly<Config>, logger: Logger, options: RendererRoleOptions = {}): Promise<RendererRole> {
  const registry = options.registry ?? new Registry();
  let guard: Guard | undefined;
  let socketDir: string | undefined;
  let endpoint: GuardEndpoint;
  let judge: UrlJudge;
  // Its own guard counts the renderer's ports and the rest of the process's as the service itself
  // (asked only once requests are judged, after the server below exists).
  const servicePorts = function* (): Iterable<number> {
    yield* server.ports();
    yield* options.servicePorts?.() ?? [];
  };
  if (config.guardUrl === undefined || options.ownGuard === true) {
    // Its own guard, reached over a unix socket in a fresh 0700 directory: the one path out of
    // Chromium's namespace, and nobody else's way in.
    socketDir = config.guardSocket === undefined ? await mkdtemp(path.join(os.tmpdir(), 'tintype-guard-')) : undefined;
    const socket = config.guardSocket ?? path.join(socketDir!, 'guard.sock');
    guard = createGuard({ socket, ...guardSettings(config), servicePorts, logger: logger.child({ component: 'guard' }), metrics: registry });
    const own = guard;
    endpoint = { socketPath: socket, takeTally: (token) => own.takeTally(token) };
    judge = (url) => judgeUrl(url, own.judge());
  } else {
    endpoint = guardEndpointFromConfig(config);
    // The same rules as the guard, for the page address before a slot (spec 4.4 rule 3); the
    // guard still judges every connection Chromium makes.
    const own = await createJudge({ ...guardSettings(config), servicePorts, logger });
    judge = (url) => judgeUrl(url, own);
  }
  const pool = createBrowserPool({ config, logger: logger.child({ component: 'browser' }), registry, guard: endpoint });
  const cache = createRenderCache(config, logger);
  // OG cards are drawn on worker threads, inside the same render budget (spec 4.5; Part 7 504).
  const og = createOgDrawer({ threads: config.ogThreads, maxQueue: config.ogQueue, drawTimeoutMs: config.renderTimeoutMs });
  const ownSettler = options.settler === undefined ? settlerFor(config, logger) : undefined;
  const settler = options.settler ?? ownSettler!;
  const server = createRendererServer({
    config, logger, registry, pool, cache, judge, settler, og, ...(options.host !== undefined ? { host: options.host } : {}),
  });
  let running = false;
  const started = new Set<Lifecycle>();
  const stopAll = async (signal?: NodeJS.Signals): Promise<void> => {
    running = false;
    // The server first, so answers in flight finish on a live Chromium and settle; the guard last.
    for (const part of [server, pool, og, cache, guard]) {
      if (part === undefined || !started.delete(part)) continue;
      try {
        await part.stop(signal);
      } catch (err) {
        logger.warn('renderer.stop_failed', { message: err instanceof Error ? err.message : 'unknown' });
      }
    }
    ownSettler?.close();
    if (socketDir !== undefined) await rm(socketDir, { recursive: true, force: true });
  };
  const healthy = (): boolean => running && server.healthy() && pool.healthy() && (guard?.healthy() ?? true);
  return {
    server,
    async start() {
      try {
        // The server listens before the pool's self-test so /healthz/live answers during it;
        // renders answer guard_unverified until it passed (spec Part 1).
        for (const part of [guard, cache, og, server, pool]) {
          if (part === undefined) continue;
          started.add(part);
          await part.start();
        }
        running = true;
      } catch (err) {
        await stopAll();
        throw err;
      }
    },
    stop: (signal) => stopAll(signal),
    healthy,
    ready: () => healthy() && pool.selfTestPassed(),
  };
}

export const rendererCommand: Command = {
  help: helpText({
    synopsis: ['tintype renderer'],
    about: 'The renderer server (screenshot, html-to-image, pdf, og) on PORT (8082), reachable from the edge only; metrics and probes on the admin port (TINTYPE_ADMIN_PORT, 9082). Leases settle to TINTYPE_POLICY_URL. SIGTERM lets renders in flight finish, then stops.',
    settings: ['PORT', 'TINTYPE_ADMIN_PORT', 'TINTYPE_DATA_DIR', 'REDIS_URL', 'TINTYPE_CACHE_MAX_BYTES', 'CHROMIUM_PATH', 'TINTYPE_SLOTS', 'TINTYPE_RENDER_TIMEOUT_MS', 'TINTYPE_MAX_OUTPUT_BYTES', 'TINTYPE_RECYCLE_AFTER_RENDERS', 'TINTYPE_BROWSER_MAX_RSS_MB', 'TINTYPE_ISOLATION', 'TINTYPE_OG_THREADS', 'TINTYPE_OG_QUEUE', 'TINTYPE_POLICY_URL', 'GUARD_URL', 'GUARD_SOCKET', 'GUARD_DNS_SERVERS', 'GUARD_DNS_TIMEOUT_MS', 'GUARD_ALLOW_CIDRS', 'GUARD_SELF_ADDRESSES', 'GUARD_CONNECT_TIMEOUT_MS', 'GUARD_IDLE_TIMEOUT_MS', 'GUARD_MAX_TUNNELS', 'OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_SERVICE_NAME', 'TINTYPE_LOG_LEVEL'],
  }),
  async run() {
    const config = loadConfig();
    const logger = createLogger('renderer', { level: config.logLevel });
    const telemetry = await startTelemetry(config, 'renderer');
    const role = await createRendererRole(config, logger);
    const stopping = waitForStopSignal();
    await Promise.race([role.start(), stopping]);
    const signal = await stopping;
    logger.info('renderer.stopping', { signal });
    await role.stop(signal);
    await telemetry.shutdown();
    logger.info('renderer.stopped', { signal });
    return 0;
  },
};
