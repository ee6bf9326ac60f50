/**
 * `tintype guard`: the egress guard on its own (docs/architecture.md §1): the forward proxy on PORT
 * (default 3128) and/or GUARD_SOCKET, metrics and probes on the admin port. Wiring only.
 */
import { createAdminServer, drainAfterSignal } from '../../lib/admin.ts';
import { loadConfig, requireGuardTokens } from '../../lib/config.ts';
import { lifecycleGroup } from '../../lib/lifecycle.ts';
import { ANY_ADDRESS } from '../../lib/listen.ts';
import { createLogger } from '../../lib/log.ts';
import { Registry } from '../../lib/metrics.ts';
import { createGuard, guardListeners, guardSettings } from '../../guard/index.ts';
import { helpText, waitForStopSignal, type Command } from './command.ts';

/** Admin port of `tintype guard` (docs/architecture.md §1). */
export const GUARD_ADMIN_PORT = 9128;

export const guardCommand: Command = {
  help: helpText({
    synopsis: ['tintype guard'],
    about: 'The egress guard (forward proxy) on PORT (3128) and/or GUARD_SOCKET; metrics and probes on the admin port (TINTYPE_ADMIN_PORT, 9128).',
    settings: ['PORT', 'TINTYPE_TERM_DRAIN_S', 'TINTYPE_ADMIN_PORT', 'GUARD_SOCKET', 'GUARD_DNS_SERVERS', 'GUARD_DNS_TIMEOUT_MS', 'GUARD_ALLOW_CIDRS', 'GUARD_SELF_ADDRESSES', 'GUARD_CONNECT_TIMEOUT_MS', 'GUARD_IDLE_TIMEOUT_MS', 'GUARD_MAX_TUNNELS', 'GUARD_MAX_TUNNELS_PER_RENDER', 'GUARD_MAX_UNNAMED_TUNNELS', 'GUARD_MAX_CONNECTIONS', 'GUARD_MAX_CONNECTIONS_PER_PEER', 'GUARD_HEADERS_TIMEOUT_MS', 'GUARD_REQUEST_TIMEOUT_MS', 'GUARD_TOKEN_KEY', 'TINTYPE_LEASE_PUBLIC_KEYS', 'TINTYPE_RENDER_TIMEOUT_MS', 'TINTYPE_LOG_LEVEL'],
  }),
  async run() {
    // Caught from the first line: a signal while the role starts stops it once started, never kills it mid-start.
    const stopping = waitForStopSignal();
    const config = loadConfig();
    // A guard that could check no render token would name no render (lib/render-token.ts).
    requireGuardTokens(config, 'the guard');
    const logger = createLogger('guard', { level: config.logLevel });
    const registry = new Registry();
    // The admin port is the service's too: refused at this host's loopback (the guard adds its own port).
    const adminPorts = new Set<number>();
    const guard = createGuard({
      ...guardSettings(config),
      servicePorts: () => adminPorts,
      ...guardListeners(config),
      // At SIGTERM, the tunnels of renders in flight get the render budget to finish, as the
      // pod's grace period does (docs/helm.md, "Rolling restarts").
      stopGraceMs: config.renderTimeoutMs,
      logger,
      metrics: registry,
    });
    // Renderers reach the guard, and Prometheus and the kubelet its admin port, over the network.
    const admin = createAdminServer({
      host: ANY_ADDRESS,
      port: config.adminPort ?? GUARD_ADMIN_PORT,
      registries: [registry],
      ready: () => guard.healthy(),
    });
    // The admin port first, so the guard counts it from its first request; stopped in reverse:
    // readiness fails first (the guard stops listening), then the admin port goes.
    const parts = lifecycleGroup(logger);
    await parts.start(admin);
    adminPorts.add(admin.port());
    await parts.start(guard);
    logger.info('guard.admin_listening', { port: admin.port() });
    const signal = await stopping;
    await drainAfterSignal(signal, config.termDrainS, [admin], logger);
    logger.info('stopping', { signal });
    await parts.stop(signal);
    logger.info('stopped', { signal });
    return 0;
  },
};
