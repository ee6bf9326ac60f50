/** `tintype policy`: the ext_authz and settle service for Envoy (DESIGN.md §1). Wiring only. */
import { loadConfig } from '../../lib/config.ts';
import { createLogger } from '../../lib/log.ts';
import { Registry } from '../../lib/metrics.ts';
import { createPolicyServer } from '../../policy/server.ts';
import type { Command } from './command.ts';

export const policyCommand: Command = {
  summary: 'ext_authz and settle service for Envoy',
  async run() {
    const config = loadConfig();
    const logger = createLogger('policy', { level: config.logLevel });
    const server = createPolicyServer({ config, logger, registry: new Registry() });
    await server.start();
    logger.info('listening', { port: server.address().port, store: server.store.kind });
    const signal = await new Promise<NodeJS.Signals>((resolve) => {
      process.once('SIGTERM', () => resolve('SIGTERM'));
      process.once('SIGINT', () => resolve('SIGINT'));
    });
    await server.stop(signal);
    logger.info('stopped', { signal });
    return 0;
  },
};
