/**
 * What `tintype controller` takes from the settings (docs/helm.md, "Scaling with the operator"): its own namespace
 * (POD_NAMESPACE, else the kubeconfig context's, else `default`), where the Lease lives; the
 * namespace it watches (TINTYPE_CONTROLLER_NAMESPACE, else its own); the Lease holder's name
 * (POD_NAME, else one no other replica can share); and how long a renderer's `/state` may take.
 */
import os from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Config } from '../lib/config.ts';
import type { KubeApi } from './kube/api.ts';
import { httpStateReader, type StateReader } from './read-state.ts';

/** A renderer's `/state` must answer within this, or the pod counts as unreadable for that poll. */
const STATE_TIMEOUT_MS = 2_000;

export function controllerSettings(
  config: Pick<Config, 'podNamespace' | 'podName' | 'controllerNamespace' | 'controllerPollMs'>,
  api: KubeApi,
): { namespace: string; leaseNamespace: string; identity: string; pollMs: number; readState: StateReader } {
  const own = config.podNamespace ?? api.contextNamespace() ?? 'default';
  return {
    namespace: config.controllerNamespace ?? own,
    leaseNamespace: own,
    identity: config.podName ?? `${os.hostname()}_${randomBytes(4).toString('hex')}`,
    pollMs: config.controllerPollMs,
    readState: httpStateReader(Math.min(STATE_TIMEOUT_MS, config.controllerPollMs)),
  };
}
