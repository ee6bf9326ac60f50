/**
 * `tintype envoy-drain`: the helper container beside Envoy in its pod (envoy/drain.ts). It idles
 * until the pod is deleted, serving Envoy's preStop (envoy/drained-hook.ts); at SIGTERM it fails
 * Envoy's readiness, waits TINTYPE_DRAIN_WAIT_S, drains Envoy through its admin API
 * (POST /drain_listeners?graceful) and waits up to TINTYPE_DRAIN_TIME_S (Envoy's --drain-time-s)
 * for the last requests and connections, answers the preStop, then exits 0. Wiring only.
 */
import { loadConfig } from '../../lib/config.ts';
import { createLogger } from '../../lib/log.ts';
import { ENVOY_ADMIN_URL, drainEnvoy } from '../../envoy/drain.ts';
import { startDrainedHook } from '../../envoy/drained-hook.ts';
import { helpText, waitForStopSignal, type Command } from './command.ts';

/** How long a preStop GET waits for the helper's SIGTERM, and how long the helper waits for that GET once drained. */
const HOOK_WAIT_MS = 10_000;

export const envoyDrainCommand: Command = {
  help: helpText({
    synopsis: ['tintype envoy-drain'],
    about: `Runs beside Envoy and drains it when the pod goes: at SIGTERM, fails Envoy's readiness (POST /healthcheck/fail), ` +
      `waits TINTYPE_DRAIN_WAIT_S (the endpoints letting go), POSTs /drain_listeners?graceful to Envoy's admin API ` +
      `(TINTYPE_ENVOY_ADMIN_URL, ${ENVOY_ADMIN_URL}) and waits until no request or connection is left or TINTYPE_DRAIN_TIME_S ` +
      '(Envoy\'s --drain-time-s) has passed; Envoy\'s preStop, GET /drained on TINTYPE_DRAIN_PORT, is answered then ' +
      '(docs/helm.md#rolling-restarts).',
    settings: ['TINTYPE_ENVOY_ADMIN_URL', 'TINTYPE_DRAIN_PORT', 'TINTYPE_DRAIN_WAIT_S', 'TINTYPE_DRAIN_TIME_S', 'TINTYPE_LOG_LEVEL'],
  }),
  async run() {
    // Caught from the first line: a signal while the role starts stops it once started, never kills it mid-start.
    const stopping = waitForStopSignal();
    const config = loadConfig();
    const logger = createLogger('envoy-drain', { level: config.logLevel });
    const hook = await startDrainedHook({ port: config.drainPort, startWaitMs: HOOK_WAIT_MS, logger });
    logger.info('envoy_drain.waiting', { admin: config.envoyAdminUrl, port: hook.port });
    const signal = await stopping;
    logger.info('stopping', { signal });
    const drain = drainEnvoy({ adminUrl: config.envoyAdminUrl, waitMs: config.drainWaitS * 1000, drainMs: config.drainTimeS * 1000, logger });
    hook.begin(drain);
    await drain;
    await hook.answeredWithin(HOOK_WAIT_MS);
    await hook.close();
    return 0;
  },
};
