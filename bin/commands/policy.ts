/** `tintype policy`: the ext_authz and settle service for Envoy (docs/architecture.md §1). Wiring only. */
import { loadConfig } from '../../lib/config.ts';
import { createLogger } from '../../lib/log.ts';
import { Registry } from '../../lib/metrics.ts';
import { startTelemetry } from '../../lib/telemetry.ts';
import { createPolicyServer } from '../../policy/server.ts';
import { waitForStopSignal, type Command } from './command.ts';

export const policyCommand: Command = {
  summary: 'ext_authz and settle service for Envoy',
  async run() {
    const config = loadConfig();
    const logger = createLogger('policy', { level: config.logLevel });
    // Before the server exists, so its `authz` and `settle` spans are exported (README "Telemetry");
    // a no-op without OTEL_EXPORTER_OTLP_ENDPOINT.
    const telemetry = startTelemetry(config, 'policy');
    const server = createPolicyServer({ config, logger, registry: new Registry() });
    try {
      await server.start();
    } catch (err) {
      await telemetry.shutdown().catch(() => {});
      throw err;
    }
    logger.info('listening', { port: server.address().port, store: server.store.kind, tracing: telemetry.enabled });
    const signal = await waitForStopSignal();
    await server.stop(signal);
    // Flushes the spans of the last checks and settles before the process ends.
    await telemetry.shutdown().catch((err: unknown) => {
      logger.warn('telemetry_shutdown_failed', { message: err instanceof Error ? err.message : String(err) });
    });
    logger.info('stopped', { signal });
    return 0;
  },
};
