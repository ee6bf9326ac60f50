/**
 * What `tintype controller` takes from the settings (docs/helm.md, "Scaling with the operator"): its own namespace
 * (POD_NAMESPACE, else the kubeconfig context's, else `default`), where the Lease lives; the
 * namespace it watches (TINTYPE_CONTROLLER_NAMESPACE, else its own); the Lease holder's name
 * (POD_NAME, else one no other replica can share); the Lease's name (TINTYPE_CONTROLLER_LEASE, else
 * `tintype-controller`) and the one pool it reconciles (TINTYPE_CONTROLLER_POOL, else every pool),
 * so two releases in one namespace each lead and scale their own; and how long a renderer's
 * `/state` may take.
 */
import os from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Config } from '../lib/config.ts';
import type { KubeApi } from './kube/api.ts';
import { httpStateReader, type StateReader } from './read-state.ts';
import { CONTROLLER_NAME } from './spec.ts';

/** A renderer's `/state` must answer within this, or the pod counts as unreadable for that poll. */
const STATE_TIMEOUT_MS = 2_000;

export function controllerSettings(
  config: Pick<Config, 'podNamespace' | 'podName' | 'controllerNamespace' | 'controllerPollMs' | 'controllerLease' | 'controllerPool'>,
  api: KubeApi,
): { namespace: string; leaseNamespace: string; leaseName: string; pool?: string; identity: string; pollMs: number; readState: StateReader } {
  const own = config.podNamespace ?? api.contextNamespace() ?? 'default';
  return {
    namespace: config.controllerNamespace ?? own,
    leaseNamespace: own,
    leaseName: config.controllerLease ?? CONTROLLER_NAME,
    ...(config.controllerPool !== undefined ? { pool: config.controllerPool } : {}),
    identity: config.podName ?? `${os.hostname()}_${randomBytes(4).toString('hex')}`,
    pollMs: config.controllerPollMs,
    readState: httpStateReader(Math.min(STATE_TIMEOUT_MS, config.controllerPollMs)),
  };
}
