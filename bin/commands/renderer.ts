/**
 * `tintype renderer` (DESIGN.md §1): the renderer server on PORT (8082) and its admin port,
 * Chromium in its own namespace, its own guard unless GUARD_URL names one, leases settled to
 * TINTYPE_POLICY_URL. Wiring only. SIGTERM/SIGINT: stop taking requests, let the ones in flight
 * finish inside the render budget, settle them, close Chromium, exit 0.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadConfig, type Config } from '../../lib/config.ts';
import type { Lifecycle } from '../../lib/lifecycle.ts';
import { createLogger, type Logger } from '../../lib/log.ts';
import { Registry } from '../../lib/metrics.ts';
import { httpSettler, type Settler } from '../../lib/policy-contract.ts';
import { propagatingFetch, startTelemetry } from '../../lib/telemetry.ts';
import { createGuard, createJudge, guardSettings, judgeUrl, type Guard } from '../../policy/guard/index.ts';
import { createBrowserPool, guardEndpointFromConfig, type GuardEndpoint } from '../../renderer/browser/index.ts';
import { createRenderCache } from '../../renderer/cache/index.ts';
import { createOgDrawer } from '../../renderer/og/index.ts';
import type { UrlJudge } from '../../renderer/operations/index.ts';
import { createRendererServer, type RendererServer } from '../../renderer/server/index.ts';
import type { Command } from './command.ts';

/** A running renderer role: server, Chromium pool, OG threads, cache and (unless GUARD_URL) its own guard. */
export interface RendererRole extends Lifecycle {
  server: RendererServer;
}

/** Where settles go: policy over HTTP, or nowhere (logged once) when no policy is configured. */
function settlerFor(config: Readonly<Config>, logger: Logger): Settler {
  if (config.policyUrl !== undefined) return httpSettler(config.policyUrl, propagatingFetch());
  logger.warn('renderer.no_policy_url', { detail: 'TINTYPE_POLICY_URL is unset; leases are not settled' });
  return { settle: async () => {} };
}

/**
 * Builds every part of the renderer from the settings; `tintype start` embeds it the same way.
 * Stop order: server (in-flight renders finish, leases settle) ▸ pool (Chromium closed) ▸
 * OG threads ▸ cache ▸ guard.
 */
export async function createRendererRole(config: Readonly<Config>, logger: Logger, registry = new Registry()): Promise<RendererRole> {
  let guard: Guard | undefined;
  let socketDir: string | undefined;
  let endpoint: GuardEndpoint;
  let judge: UrlJudge;
  if (config.guardUrl === undefined) {
    // Its own guard, reached over a unix socket: the one path out of Chromium's namespace.
    socketDir = config.guardSocket === undefined ? await mkdtemp(path.join(os.tmpdir(), 'tintype-guard-')) : undefined;
    const socket = config.guardSocket ?? path.join(socketDir!, 'guard.sock');
    guard = createGuard({ socket, ...guardSettings(config), logger: logger.child({ component: 'guard' }), metrics: registry });
    const own = guard;
    endpoint = { socketPath: socket, takeTally: (token) => own.takeTally(token) };
    judge = (url) => judgeUrl(url, own.judge());
  } else {
    endpoint = guardEndpointFromConfig(config);
    // The same rules as the guard, for the page address before a slot (spec 4.4 rule 3); the
    // guard still judges every connection Chromium makes.
    const own = await createJudge({ ...guardSettings(config), logger });
    judge = (url) => judgeUrl(url, own);
  }
  const pool = createBrowserPool({ config, logger, registry, guard: endpoint });
  const cache = createRenderCache(config, logger);
  // OG cards are drawn on worker threads, inside the same render budget (spec 4.5; Part 7 504).
  const og = createOgDrawer({ threads: config.ogThreads, maxQueue: config.ogQueue, drawTimeoutMs: config.renderTimeoutMs });
  const server = createRendererServer({
    config, logger, registry, pool, cache, judge, settler: settlerFor(config, logger), og,
  });
  let running = false;
  return {
    server,
    async start() {
      await guard?.start();
      await cache.start();
      await og.start();
      await server.start();
      // The self-test runs inside start(); until it passes, renders answer guard_unverified.
      await pool.start();
      running = true;
    },
    async stop(signal) {
      running = false;
      await server.stop(signal);
      await pool.stop(signal);
      await og.stop(signal);
      await cache.stop(signal);
      await guard?.stop(signal);
      if (socketDir !== undefined) await rm(socketDir, { recursive: true, force: true });
    },
    healthy: () => running && server.healthy() && pool.healthy(),
  };
}

export const rendererCommand: Command = {
  summary: 'the renderer server (screenshot, html-to-image, pdf, og) with its Chromium pool',
  async run() {
    const config = loadConfig();
    const logger = createLogger('renderer', { level: config.logLevel });
    const telemetry = startTelemetry(config, 'renderer');
    const role = await createRendererRole(config, logger);
    const stopping = new Promise<NodeJS.Signals>((resolve) => {
      process.once('SIGTERM', () => resolve('SIGTERM'));
      process.once('SIGINT', () => resolve('SIGINT'));
    });
    await Promise.race([role.start(), stopping]);
    const signal = await stopping;
    logger.info('renderer.stopping', { signal });
    await role.stop(signal);
    await telemetry.shutdown();
    logger.info('renderer.stopped', { signal });
    return 0;
  },
};
