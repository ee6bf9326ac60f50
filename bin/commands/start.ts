/**
 * `tintype start`: the embedded default (DESIGN.md §1). The edge (the stand-in for
 * envoy/envoy.yaml), policy on SQLite (or DATABASE_URL), the guard on a unix socket, the
 * Chromium pool in its own network namespace, and the renderer, in one process; state and
 * cache under TINTYPE_DATA_DIR. Policy and the renderer listen on loopback only; the edge is
 * the one public port; metrics and probes are on the admin port. Wiring only.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createAdminServer } from '../../envoy/edge/admin.ts';
import { createEdge } from '../../envoy/edge/edge.ts';
import { loadConfig, type Config } from '../../lib/config.ts';
import { createLogger } from '../../lib/log.ts';
import { Registry } from '../../lib/metrics.ts';
import { agentSettler } from '../../lib/policy-contract.ts';
import { startTelemetry } from '../../lib/telemetry.ts';
import { createGuard, judgeUrl } from '../../policy/guard/index.ts';
import { createPolicyServer } from '../../policy/server.ts';
import { createBrowserPool } from '../../renderer/browser/index.ts';
import { createRenderCache } from '../../renderer/cache/index.ts';
import { createOgDrawer } from '../../renderer/og/index.ts';
import { openapiJson } from '../../renderer/openapi/document.ts';
import { createRendererServer } from '../../renderer/server/index.ts';
import type { Command } from './command.ts';

/** Public port of `tintype start` (DESIGN.md §1) and its admin port. */
export const START_PORT = 8080;
export const START_ADMIN_PORT = 9080;

function waitForSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
  });
}

export const startCommand: Command = {
  summary: 'edge + policy + renderer + guard on one machine',
  async run() {
    const config = loadConfig();
    const logger = createLogger('start', { level: config.logLevel });
    const telemetry = startTelemetry(config, 'start');
    const registry = new Registry();
    mkdirSync(config.dataDir, { recursive: true });
    // The guard's socket is the one path out of Chromium's namespace; a short private path
    // (sun_path is ~107 bytes), removed at exit.
    const runDir = mkdtempSync(path.join(os.tmpdir(), 'tintype-run-'));
    const guardSocket = config.guardSocket ?? path.join(runDir, 'guard.sock');

    // Inner roles listen on loopback ports of their own, never on the public one.
    const inner: Readonly<Config> = Object.freeze({ ...config, port: 0, adminPort: 0 });
    const policy = createPolicyServer({ config: inner, logger: createLogger('policy', { level: config.logLevel }), registry, host: '127.0.0.1' });
    const guard = createGuard({
      socket: guardSocket,
      dnsServers: config.guardDnsServers,
      dnsTimeoutMs: config.guardDnsTimeoutMs,
      allowCidrs: config.guardAllowCidrs,
      selfAddresses: config.guardSelfAddresses,
      connectTimeoutMs: config.guardConnectTimeoutMs,
      idleTimeoutMs: config.guardIdleTimeoutMs,
      maxTunnels: config.guardMaxTunnels,
      logger: createLogger('guard', { level: config.logLevel }),
      metrics: registry,
    });
    const pool = createBrowserPool({
      config,
      logger: createLogger('browser', { level: config.logLevel }),
      registry,
      guard: { socketPath: guardSocket, takeTally: (token) => guard.takeTally(token) },
    });
    const rendererLogger = createLogger('renderer', { level: config.logLevel });

    const stopped: { stop(): Promise<void> }[] = [];
    const stopAll = async (): Promise<void> => {
      for (const part of stopped.reverse()) {
        try {
          await part.stop();
        } catch (err) {
          logger.warn('stop.failed', { message: err instanceof Error ? err.message : 'unknown' });
        }
      }
      stopped.length = 0;
      rmSync(runDir, { recursive: true, force: true });
    };

    try {
      await policy.start();
      stopped.push(policy);
      await guard.start();
      stopped.push(guard);
      await pool.start();
      stopped.push(pool);
      const cache = createRenderCache(config, rendererLogger);
      await cache.start();
      stopped.push(cache);
      // OG cards are drawn on worker threads inside the render budget (spec 4.5; Part 7 504).
      const og = createOgDrawer({ threads: config.ogThreads, maxQueue: config.ogQueue, drawTimeoutMs: config.renderTimeoutMs });
      await og.start();
      stopped.push(og);
      const policyUrl = `http://127.0.0.1:${policy.address().port}`;
      // A settle follows every answer: over kept-alive node:http, not fetch (bench/edge.ts).
      const settler = agentSettler(policyUrl);
      stopped.push({ stop: async () => settler.close() });
      const renderer = createRendererServer({
        config: inner,
        logger: rendererLogger,
        registry,
        pool,
        cache,
        settler,
        judge: async (url) => {
          const j = await judgeUrl(url, guard.judge());
          return j.ok ? { ok: true } : { ok: false, reason: j.reason };
        },
        og,
        host: '127.0.0.1',
      });
      await renderer.start();
      stopped.push(renderer);
      const edge = createEdge({
        policyUrl,
        rendererUrl: `http://127.0.0.1:${renderer.address().port}`,
        port: config.port ?? START_PORT,
        openapi: openapiJson(),
        renderTimeoutMs: config.renderTimeoutMs,
        logger: createLogger('edge', { level: config.logLevel }),
        metrics: registry,
      });
      const admin = createAdminServer({
        port: config.adminPort ?? START_ADMIN_PORT,
        registries: [registry],
        ready: () => edge.healthy() && policy.healthy() && guard.healthy() && pool.selfTestPassed() && renderer.healthy(),
      });
      await admin.start();
      stopped.push(admin);
      await edge.start();
      stopped.push(edge);

      // Where it listens and how to make a key; no secret is ever printed here (spec Part 5 rule 2).
      process.stdout.write([
        `tintype listening on http://localhost:${edge.port()} (OpenAPI document at /openapi.json)`,
        `admin (metrics, /healthz/live, /healthz/ready) on http://127.0.0.1:${admin.port()}`,
        `state and cache in ${config.dataDir}`,
        `create a key: TINTYPE_DATA_DIR=${config.dataDir} bin/tintype keys create --plan free`,
        '',
      ].join('\n'));
    } catch (err) {
      await stopAll();
      await telemetry.shutdown();
      throw err;
    }

    const signal = await waitForSignal();
    logger.info('stopping', { signal });
    // Reverse order: the edge stops accepting and lets answers in flight finish (their leases
    // settle), then the renderer, Chromium, the guard, policy, admin.
    await stopAll();
    await telemetry.shutdown();
    logger.info('stopped', { signal });
    return 0;
  },
};
