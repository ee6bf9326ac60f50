/**
 * `tintype envoy-drain`: the helper container beside Envoy in its pod (envoy/drain.ts). It idles
 * until the pod is deleted; at SIGTERM it waits TINTYPE_DRAIN_WAIT_S, drains Envoy through its
 * admin API (POST /drain_listeners?graceful) and waits up to TINTYPE_DRAIN_TIME_S (Envoy's
 * --drain-time-s) for the last requests, then exits 0. Wiring only.
 */
import { loadConfig } from '../../lib/config.ts';
import { createLogger } from '../../lib/log.ts';
import { ENVOY_ADMIN_URL, drainEnvoy } from '../../envoy/drain.ts';
import { helpText, waitForStopSignal, type Command } from './command.ts';

export const envoyDrainCommand: Command = {
  help: helpText({
    synopsis: ['tintype envoy-drain'],
    about: `Runs beside Envoy and drains it when the pod goes: at SIGTERM, waits TINTYPE_DRAIN_WAIT_S (the endpoints letting go), ` +
      `POSTs /drain_listeners?graceful to Envoy's admin API (TINTYPE_ENVOY_ADMIN_URL, ${ENVOY_ADMIN_URL}) and waits until no ` +
      'request is in flight or TINTYPE_DRAIN_TIME_S (Envoy\'s --drain-time-s) has passed (docs/helm.md#rolling-restarts).',
    settings: ['TINTYPE_ENVOY_ADMIN_URL', 'TINTYPE_DRAIN_WAIT_S', 'TINTYPE_DRAIN_TIME_S', 'TINTYPE_LOG_LEVEL'],
  }),
  async run() {
    const config = loadConfig();
    const logger = createLogger('envoy-drain', { level: config.logLevel });
    logger.info('envoy_drain.waiting', { admin: config.envoyAdminUrl });
    // Nothing else holds the event loop open while it idles.
    const idle = setInterval(() => {}, 2 ** 30);
    const signal = await waitForStopSignal();
    clearInterval(idle);
    logger.info('stopping', { signal });
    await drainEnvoy({ adminUrl: config.envoyAdminUrl, waitMs: config.drainWaitS * 1000, drainMs: config.drainTimeS * 1000, logger });
    return 0;
  },
};
