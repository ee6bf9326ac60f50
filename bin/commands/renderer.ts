/**
 * `tintype renderer` (docs/architecture.md §1): the renderer server on PORT (8082) and its admin port,
 * Chromium in its own namespace, its own guard unless GUARD_URL names one, leases settled to
 * TINTYPE_POLICY_URL. Wiring only: the role is built in renderer/role.ts. SIGTERM/SIGINT: stop
 * taking requests, let the ones in flight finish inside the render budget, settle them, close
 * Chromium, exit 0.
 *
 * The renderer serves only a lease policy signed (verified with TINTYPE_LEASE_PUBLIC_KEYS and claimed at policy before any work);
 * its port should still be reachable from the edge only: all interfaces here, because Envoy
 * reaches the pod by its address (the deployment's NetworkPolicy admits only the edge); loopback
 * inside `tintype start`.
 */
import { loadConfig } from '../../lib/config.ts';
import { lifecycleGroup } from '../../lib/lifecycle.ts';
import { createLogger } from '../../lib/log.ts';
import { startTelemetry } from '../../lib/telemetry.ts';
import { createRendererRole } from '../../renderer/role.ts';
import { drainAfterSignal } from '../../lib/admin.ts';
import { helpText, waitForStopSignal, type Command } from './command.ts';

export const rendererCommand: Command = {
  help: helpText({
    synopsis: ['tintype renderer'],
    about: 'The renderer server (screenshot, html-to-image, pdf, og) on PORT (8082), reachable from the edge only; metrics and probes on the admin port (TINTYPE_ADMIN_PORT, 9082). Leases settle to TINTYPE_POLICY_URL. SIGTERM lets renders in flight finish, then stops.',
    settings: ['PORT', 'TINTYPE_TERM_DRAIN_S', 'TINTYPE_ADMIN_PORT', 'TINTYPE_DATA_DIR', 'REDIS_URL', 'TINTYPE_CACHE_MAX_BYTES', 'CHROMIUM_PATH', 'TINTYPE_SLOTS', 'TINTYPE_RENDER_TIMEOUT_MS', 'TINTYPE_MAX_OUTPUT_BYTES', 'TINTYPE_RECYCLE_AFTER_RENDERS', 'TINTYPE_BROWSER_MAX_RSS_MB', 'TINTYPE_ISOLATION', 'TINTYPE_OG_THREADS', 'TINTYPE_OG_QUEUE', 'TINTYPE_POLICY_URL', 'TINTYPE_LEASE_PUBLIC_KEYS', 'GUARD_URL', 'GUARD_SOCKET', 'GUARD_DNS_SERVERS', 'GUARD_DNS_TIMEOUT_MS', 'GUARD_ALLOW_CIDRS', 'GUARD_SELF_ADDRESSES', 'GUARD_CONNECT_TIMEOUT_MS', 'GUARD_IDLE_TIMEOUT_MS', 'GUARD_MAX_TUNNELS', 'GUARD_MAX_TUNNELS_PER_RENDER', 'GUARD_TOKEN_KEY', 'OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_SERVICE_NAME', 'TINTYPE_LOG_LEVEL'],
  }),
  async run() {
    const config = loadConfig();
    const logger = createLogger('renderer', { level: config.logLevel });
    const parts = lifecycleGroup(logger, 'renderer.stop_failed');
    const telemetry = await startTelemetry(config, 'renderer');
    parts.add({ stop: () => telemetry.shutdown() });
    const role = await createRendererRole(config, logger);
    const stopping = waitForStopSignal();
    await Promise.race([parts.start(role), stopping]);
    const signal = await stopping;
    await drainAfterSignal(signal, config.termDrainS, [role.server], logger);
    logger.info('renderer.stopping', { signal });
    await parts.stop(signal);
    logger.info('renderer.stopped', { signal });
    return 0;
  },
};
