/** `tintype policy`: the ext_authz and settle service for Envoy (docs/architecture.md §1). Wiring only. */
import { loadConfig } from '../../lib/config.ts';
import { lifecycleGroup } from '../../lib/lifecycle.ts';
import { ANY_ADDRESS } from '../../lib/listen.ts';
import { createLogger } from '../../lib/log.ts';
import { Registry } from '../../lib/metrics.ts';
import { startTelemetry } from '../../lib/telemetry.ts';
import path from 'node:path';
import { ADMIN_SOCKET_NAME, createAdminServer, drainAfterSignal } from '../../lib/admin.ts';
import { ensurePrivateDir } from '../../lib/private-files.ts';
import { systemClock } from '../../policy/calendar.ts';
import { POLICY_ADMIN_PORT, createPolicyServer } from '../../policy/server.ts';
import { USAGE_PATH, usageHandler } from '../../policy/usage-http.ts';
import { EGRESS_PATH, egressHandler } from '../../policy/egress-report.ts';
import { openUsageReader } from '../../policy/usage-reader.ts';
import { startLedgerUpkeep } from '../../policy/ledger/index.ts';
import { helpText, waitForStopSignal, type Command } from './command.ts';

export const policyCommand: Command = {
  help: helpText({
    synopsis: ['tintype policy'],
    about: 'The ext_authz service for Envoy on PORT (8081); claim, release and settle for renderers on TINTYPE_POLICY_SETTLE_PORT (8181); metrics and probes on the admin port (TINTYPE_ADMIN_PORT, 9081); those and the usage report and egress audit (GET /usage, /egress) on the admin socket TINTYPE_DATA_DIR/admin.sock (on the admin port too with TINTYPE_POLICY_USAGE_OPEN=true). SIGTERM or SIGINT stops it.',
    settings: ['PORT', 'TINTYPE_TERM_DRAIN_S', 'TINTYPE_POLICY_SETTLE_PORT', 'TINTYPE_ADMIN_PORT', 'TINTYPE_POLICY_USAGE_OPEN', 'TINTYPE_RENDERER_TOKEN', 'TINTYPE_POLICY_MAX_CONNECTIONS', 'TINTYPE_LEASE_SIGNING_KEY', 'TINTYPE_LEASE_PUBLIC_KEYS', 'DATABASE_URL', 'TINTYPE_COUNTERS_URL', 'TINTYPE_DATA_DIR', 'TINTYPE_PG_POOL', 'TINTYPE_SQLITE_SYNC', 'TINTYPE_MIGRATE', 'TINTYPE_PLANS', 'TINTYPE_RENDER_TIMEOUT_MS', 'TINTYPE_LEASE_GRACE_MS', 'TINTYPE_EGRESS_AUDIT_DAYS', 'TINTYPE_LEDGER_MONTHS', 'OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_SERVICE_NAME', 'TINTYPE_LOG_LEVEL'],
  }),
  async run() {
    // Caught from the first line: a signal while the role starts stops it once started, never kills it mid-start.
    const stopping = waitForStopSignal();
    const config = loadConfig();
    const logger = createLogger('policy', { level: config.logLevel });
    // Before the server exists, so its `authz` and `settle` spans are exported (docs/operations.md "Telemetry");
    // a no-op without OTEL_EXPORTER_OTLP_ENDPOINT.
    const telemetry = await startTelemetry(config, 'policy');
    const registry = new Registry();
    const server = createPolicyServer({ config, logger, registry });
    // Prometheus and the kubelet reach the admin port over the network; the usage report and
    // the egress audit are on the admin socket in the data directory (kubectl exec, or a shell
    // on the host), never on the ports Envoy and the renderers call, and on the admin port only
    // when TINTYPE_POLICY_USAGE_OPEN puts them there (docs/operations.md "Reading usage").
    const reports = {
      [USAGE_PATH]: usageHandler({ reader: openUsageReader(config), plans: server.plans, clock: systemClock, logger }),
      [EGRESS_PATH]: egressHandler({ store: server.store.egress, logger }),
    };
    ensurePrivateDir(config.dataDir);
    const admin = createAdminServer({
      host: ANY_ADDRESS,
      port: config.adminPort ?? POLICY_ADMIN_PORT,
      registries: [registry],
      ready: async () => server.healthy() && (await server.store.ping().then(() => true, () => false)),
      routes: config.policyUsageOpen ? reports : {},
      socket: { path: path.join(config.dataDir, ADMIN_SOCKET_NAME), routes: reports },
      onSocketHeld: (held) => logger.warn('admin_socket_held', { path: held, detail: 'another policy process on this data directory answers /usage and /egress there' }),
      onDrain: () => server.leave(),
    });
    // Stopped in reverse: the server (readiness fails first), the admin port, then the spans of
    // the last checks and settles are flushed before the process ends.
    const parts = lifecycleGroup(logger);
    parts.add({ stop: () => telemetry.shutdown() });
    await parts.start(admin, server);
    // On PostgreSQL: the ledger's months made ahead and kept (TINTYPE_LEDGER_MONTHS). With the
    // counters in Redis, the store runs this replica's share of the ledger stream's sink
    // (docs/operations.md "Ledger stream").
    if (config.databaseUrl !== undefined) {
      parts.add(startLedgerUpkeep({ databaseUrl: config.databaseUrl, logger, keepMonths: config.ledgerMonths }));
    }
    logger.info('listening', { port: server.address().port, settle_port: server.settleAddress().port, admin_port: admin.port(), store: server.store.kind, tracing: telemetry.enabled });
    const signal = await stopping;
    await drainAfterSignal(signal, config.termDrainS, [admin], logger);
    await parts.stop(signal);
    logger.info('stopped', { signal });
    return 0;
  },
};
