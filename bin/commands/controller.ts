/**
 * `tintype controller` (docs/architecture.md §1): the Kubernetes operator that scales RenderPools on render
 * slots. Credentials from KUBECONFIG outside a cluster, the service account inside; watches
 * TINTYPE_CONTROLLER_NAMESPACE (default: its own, POD_NAMESPACE) and in it TINTYPE_CONTROLLER_POOL
 * (default: every RenderPool); the Lease TINTYPE_CONTROLLER_LEASE (default `tintype-controller`)
 * in its own namespace, held as POD_NAME. Metrics and probes on the admin port. Wiring only.
 * SIGTERM/SIGINT: stop writing, release the Lease, exit 0.
 */
import { createAdminServer } from '../../lib/admin.ts';
import { loadConfig } from '../../lib/config.ts';
import { lifecycleGroup } from '../../lib/lifecycle.ts';
import { ANY_ADDRESS } from '../../lib/listen.ts';
import { createLogger } from '../../lib/log.ts';
import { Registry } from '../../lib/metrics.ts';
import { controllerSettings, createController, createKubeApi, loadKubeConfig } from '../../controller/index.ts';
import { helpText, waitForStopSignal, type Command } from './command.ts';

/** Admin port of `tintype controller`: metrics and /healthz/*. */
export const CONTROLLER_ADMIN_PORT = 9083;
export const controllerCommand: Command = {
  help: helpText({
    synopsis: ['tintype controller'],
    about: 'The Kubernetes operator: watches RenderPools in TINTYPE_CONTROLLER_NAMESPACE (default: its own), scales their ' +
      'renderers on render slots and reports their state; one replica leads through a Lease. Credentials from KUBECONFIG ' +
      'outside a cluster, the service account inside. Metrics and probes on the admin port (TINTYPE_ADMIN_PORT, 9083).',
    settings: ['TINTYPE_ADMIN_PORT', 'TINTYPE_CONTROLLER_NAMESPACE', 'TINTYPE_CONTROLLER_POOL', 'TINTYPE_CONTROLLER_LEASE',
      'TINTYPE_CONTROLLER_POLL_MS', 'POD_NAMESPACE', 'POD_NAME',
      'KUBECONFIG', 'KUBERNETES_SERVICE_HOST', 'TINTYPE_LOG_LEVEL'],
  }),
  async run() {
    // Caught from the first line: a signal while the role starts stops it once started, never kills it mid-start.
    const stopping = waitForStopSignal();
    const config = loadConfig();
    const logger = createLogger('controller', { level: config.logLevel });
    const kc = loadKubeConfig({ kubeconfig: config.kubeconfig, inCluster: config.inCluster });
    const api = createKubeApi(kc);
    const registry = new Registry();
    const settings = controllerSettings(config, api);
    const controller = createController({ api, ...settings, logger, registry });
    // Prometheus and the kubelet reach the admin port over the network.
    const admin = createAdminServer({
      host: ANY_ADDRESS,
      port: config.adminPort ?? CONTROLLER_ADMIN_PORT,
      registries: [registry],
      ready: () => controller.healthy(),
    });
    const parts = lifecycleGroup(logger);
    await parts.start(admin, controller);
    logger.info('controller.started', { admin_port: admin.port(), namespace: settings.namespace });
    const signal = await stopping;
    logger.info('stopping', { signal });
    await parts.stop(signal);
    logger.info('stopped', { signal });
    return 0;
  },
};
