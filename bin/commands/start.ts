/**
 * `tintype start`: the embedded default (docs/architecture.md §1). The edge (the stand-in for
 * the chart's Envoy, charts/tintype/files/envoy.yaml), policy on SQLite (or DATABASE_URL), the guard on a unix socket, the
 * Chromium pool in its own network namespace, and the renderer, in one process; state and
 * cache under TINTYPE_DATA_DIR. Policy and the renderer listen on loopback only; the edge is
 * the one public port; metrics and probes are on the admin port. Wiring only.
 */
import { createPublicKey, generateKeyPairSync } from 'node:crypto';
import path from 'node:path';
import { ADMIN_SOCKET_NAME, createAdminServer } from '../../lib/admin.ts';
import { createEdge } from '../../envoy/edge/edge.ts';
import { loadConfig, type Config } from '../../lib/config.ts';
import { ensurePrivateDir } from '../../lib/private-files.ts';
import { newRendererToken } from '../../lib/renderer-token.ts';
import { lifecycleGroup } from '../../lib/lifecycle.ts';
import { createLogger } from '../../lib/log.ts';
import { Registry } from '../../lib/metrics.ts';
import { startTelemetry } from '../../lib/telemetry.ts';
import { systemClock } from '../../policy/calendar.ts';
import { createPolicyServer } from '../../policy/server.ts';
import { startLedgerUpkeep } from '../../policy/ledger/index.ts';
import { USAGE_PATH, usageHandler } from '../../policy/usage-http.ts';
import { EGRESS_PATH, egressHandler } from '../../policy/egress-report.ts';
import { openUsageReader } from '../../policy/usage-reader.ts';
import { openapiJson } from '../../renderer/openapi/document.ts';
import { createRendererRole } from '../../renderer/role.ts';
import { helpText, waitForStopSignal, type Command } from './command.ts';

/** Public port of `tintype start` (docs/architecture.md §1) and its admin port. */
export const START_PORT = 8080;
export const START_ADMIN_PORT = 9080;

/** Where `tintype start` listens and keeps its state. */
export interface StartupFacts {
  /** The edge, the one public port. */
  url: string;
  /** The admin listener: metrics, probes. */
  admin: string;
  /** The admin socket: those, the usage report and the egress audit. */
  adminSocket: string;
  dataDir: string;
}

/**
 * What `tintype start` prints on stdout once it listens: where, where its state is and how to make
 * a key, as sentences for a person at a terminal, and for a pipe or a file as one JSON line with
 * the same facts, shaped as its log lines (README "Quick start"). No secret is ever printed here
 * (spec Part 5 rule 2).
 */
export function announce(facts: StartupFacts, terminal: boolean, write: (text: string) => void): void {
  const createKey = `TINTYPE_DATA_DIR=${facts.dataDir} bin/tintype keys create --plan free`;
  if (!terminal) {
    createLogger('start', { sink: (line) => write(`${line}\n`) }).info('start.listening', { ...facts, openapi: `${facts.url}/openapi.json`, createKey });
    return;
  }
  write([
    `tintype is listening on ${facts.url} (the OpenAPI document is at ${facts.url}/openapi.json).`,
    `Metrics, /healthz/live and /healthz/ready are on ${facts.admin}; /usage and /egress on the unix socket ${facts.adminSocket}.`,
    `State and cache are kept in ${facts.dataDir}.`,
    `Create a key with: ${createKey}`,
    '',
  ].join('\n'));
}

export const startCommand: Command = {
  help: helpText({
    synopsis: ['tintype start'],
    about: 'The whole service in one process: the edge on PORT (8080), policy, the renderer and its guard on loopback; metrics and probes on the admin port (TINTYPE_ADMIN_PORT, 127.0.0.1:9080), and with the usage report and egress audit (GET /usage, /egress) on the unix socket TINTYPE_DATA_DIR/admin.sock. State and cache in TINTYPE_DATA_DIR. SIGTERM or Ctrl-C lets renders in flight finish, then stops.',
    settings: ['PORT', 'TINTYPE_ADMIN_PORT', 'DATABASE_URL', 'TINTYPE_DATA_DIR', 'TINTYPE_PG_POOL', 'TINTYPE_SQLITE_SYNC', 'TINTYPE_PLANS', 'REDIS_URL', 'TINTYPE_CACHE_MAX_BYTES', 'CHROMIUM_PATH', 'TINTYPE_SLOTS', 'TINTYPE_RENDER_TIMEOUT_MS', 'TINTYPE_MAX_OUTPUT_BYTES', 'TINTYPE_RECYCLE_AFTER_RENDERS', 'TINTYPE_BROWSER_MAX_RSS_MB', 'TINTYPE_ISOLATION', 'TINTYPE_OG_THREADS', 'TINTYPE_OG_QUEUE', 'TINTYPE_LEASE_GRACE_MS', 'TINTYPE_EGRESS_AUDIT_DAYS', 'TINTYPE_LEDGER_MONTHS', 'TINTYPE_LEASE_SIGNING_KEY', 'TINTYPE_LEASE_PUBLIC_KEYS', 'GUARD_DNS_SERVERS', 'GUARD_DNS_TIMEOUT_MS', 'GUARD_ALLOW_CIDRS', 'GUARD_SELF_ADDRESSES', 'GUARD_CONNECT_TIMEOUT_MS', 'GUARD_IDLE_TIMEOUT_MS', 'GUARD_MAX_TUNNELS', 'GUARD_SOCKET', 'OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_SERVICE_NAME', 'TINTYPE_LOG_LEVEL'],
  }),
  async run() {
    // Caught from the first line: a signal while the role starts stops it once started, never kills it mid-start.
    const stopping = waitForStopSignal();
    const config = loadConfig();
    const logger = createLogger('start', { level: config.logLevel });
    const parts = lifecycleGroup(logger);
    const telemetry = await startTelemetry(config, 'start');
    parts.add({ stop: () => telemetry.shutdown() });
    const registry = new Registry();
    ensurePrivateDir(config.dataDir);

    // Inner roles listen on loopback ports of their own, never on the public one. Leases are
    // signed with a key pair made for this start alone, unless a signing key is given; the
    // renderer is given the public key only.
    const leaseSigningKey = config.leaseSigningKey ?? generateKeyPairSync('ed25519').privateKey;
    const leasePublicKeys = Object.freeze([createPublicKey(leaseSigningKey), ...config.leasePublicKeys]);
    // The renderer token too (lib/renderer-token.ts): made for this start, held by policy and the renderer only.
    const inner: Readonly<Config> = Object.freeze({ ...config, port: 0, adminPort: 0, policySettlePort: 0, leaseSigningKey, leasePublicKeys, rendererToken: newRendererToken() });
    const policy = createPolicyServer({ config: inner, logger: createLogger('policy', { level: config.logLevel }), registry, host: '127.0.0.1' });

    // Every port this process listens on: its guard refuses them at this host's loopback, whatever
    // GUARD_ALLOW_CIDRS opens (the edge listens on every address, so 127.0.0.2 reaches it too).
    const ports = new Set<number>([config.port ?? START_PORT, config.adminPort ?? START_ADMIN_PORT].filter((p) => p !== 0));

    try {
      await parts.start(policy);
      // On PostgreSQL, the ledger's months made ahead and kept (docs/operations.md "Ledger retention").
      if (config.databaseUrl !== undefined) {
        parts.add(startLedgerUpkeep({ databaseUrl: config.databaseUrl, logger: createLogger('policy', { level: config.logLevel }), keepMonths: config.ledgerMonths }));
      }
      ports.add(policy.address().port);
      ports.add(policy.settleAddress().port);
      // The renderer exactly as `tintype renderer` builds it, with three differences: it listens
      // on loopback only, its guard is always its own on a private unix socket, and it settles
      // to the policy above.
      const renderer = await createRendererRole(
        Object.freeze({ ...inner, leaseSigningKey: undefined, guardUrl: undefined, policyUrl: `http://127.0.0.1:${policy.settleAddress().port}` }),
        createLogger('renderer', { level: config.logLevel }),
        { registry, host: '127.0.0.1', ownGuard: true, servicePorts: () => ports },
      );
      await parts.start(renderer);
      const edge = createEdge({
        policyUrl: `http://127.0.0.1:${policy.address().port}`,
        rendererUrls: [`http://127.0.0.1:${renderer.server.address().port}`],
        port: config.port ?? START_PORT,
        openapi: openapiJson(),
        renderTimeoutMs: config.renderTimeoutMs,
        maxConnections: config.edgeMaxConnections,
        logger: createLogger('edge', { level: config.logLevel }),
        metrics: registry,
      });
      const admin = createAdminServer({
        port: config.adminPort ?? START_ADMIN_PORT,
        registries: [registry],
        ready: () => edge.healthy() && policy.healthy() && renderer.ready(),
        // Policy's usage report and egress audit, on the admin socket only (docs/operations.md "Reading usage").
        socket: {
          path: path.join(config.dataDir, ADMIN_SOCKET_NAME),
          routes: {
            [USAGE_PATH]: usageHandler({ reader: openUsageReader(config), plans: policy.plans, clock: systemClock, logger: createLogger('policy', { level: config.logLevel }) }),
            [EGRESS_PATH]: egressHandler({ store: policy.store.egress, logger: createLogger('policy', { level: config.logLevel }) }),
          },
        },
      });
      await parts.start(admin);
      ports.add(admin.port());
      await parts.start(edge);
      ports.add(edge.port());

      announce({
        url: `http://localhost:${edge.port()}`,
        admin: `http://127.0.0.1:${admin.port()}`,
        adminSocket: path.join(config.dataDir, ADMIN_SOCKET_NAME),
        dataDir: config.dataDir,
      }, process.stdout.isTTY === true, (text) => process.stdout.write(text));
    } catch (err) {
      await parts.stop();
      throw err;
    }

    const signal = await stopping;
    logger.info('stopping', { signal });
    // Reverse order: the edge stops accepting and lets answers in flight finish, the admin port
    // closes, the renderer settles its leases and closes Chromium and its guard, then policy,
    // then the last spans are flushed.
    await parts.stop(signal);
    logger.info('stopped', { signal });
    return 0;
  },
};
