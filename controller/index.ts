/**
 * The operator (docs/helm.md, "Scaling with the operator"): watches RenderPools, Deployments and Pods in one
 * namespace, reads each ready renderer's `/state` every poll, and as leader scales the
 * Deployments and reports on the pools. One lifecycle: start(), stop(signal), healthy().
 */
import type { Lifecycle } from '../lib/lifecycle.ts';
import type { Logger } from '../lib/log.ts';
import type { Registry } from '../lib/metrics.ts';
import { ApiError, type KubeApi } from './kube/api.ts';
import { createReflector, type Backoff, type Reflector } from './kube/reflector.ts';
import { createLeaderElector, type LeaderElector, type LeaderTimings } from './leader.ts';
import { controllerMetrics } from './metrics.ts';
import type { StateReader } from './read-state.ts';
import { reconcilePool, type PoolMemory } from './reconcile.ts';
import { CONTROLLER_NAME, GROUP, PLURAL, VERSION } from './spec.ts';

export { createKubeApi, loadKubeConfig } from './kube/api.ts';
export { httpStateReader } from './read-state.ts';
export { controllerSettings } from './settings.ts';

export interface ControllerOptions {
  api: KubeApi;
  /** Where RenderPools, Deployments and Pods are watched. */
  namespace: string;
  /** Where the Lease lives (the controller's own namespace). */
  leaseNamespace: string;
  /** The Lease's name (default `tintype-controller`). */
  leaseName?: string;
  /** The one RenderPool to reconcile (default: every pool in the namespace). */
  pool?: string;
  /** The Lease holder's name (the pod's name). */
  identity: string;
  pollMs: number;
  readState: StateReader;
  logger: Logger;
  registry: Registry;
  now?: () => number;
  leaderTimings?: LeaderTimings;
  backoff?: Backoff;
  /** False for tests that drive leader.tick() and reconcile() themselves. */
  timers?: boolean;
}

export interface Controller extends Lifecycle {
  /** One pass over every RenderPool (the poll does this every pollMs). */
  reconcile(): Promise<void>;
  leader: LeaderElector;
  /** True once every watch has listed. */
  synced(): boolean;
  /** The watched copy of a collection, by name. */
  cache(resource: 'renderpools' | 'deployments' | 'pods'): Map<string, any>;
}

export function createController(options: ControllerOptions): Controller {
  const { api, namespace, logger } = options;
  const now = options.now ?? Date.now;
  const metrics = controllerMetrics(options.registry);
  const leader = createLeaderElector({
    api, namespace: options.leaseNamespace, name: options.leaseName ?? CONTROLLER_NAME, identity: options.identity, logger, now,
    ...(options.leaderTimings !== undefined ? { timings: options.leaderTimings } : {}),
    timer: options.timers !== false,
  });
  metrics.leader.collect(() => metrics.leader.set(leader.isLeader() ? 1 : 0));
  const memories = new Map<string, PoolMemory>();
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let again = false;
  let started = false;

  const reflector = (resource: string, path: string, onChange: () => void = () => {}): Reflector =>
    createReflector({
      api, path, onChange,
      ...(options.backoff !== undefined ? { backoff: options.backoff } : {}),
      onError: (kind, err) => {
        metrics.watchErrors.inc({ resource, kind });
        logger.warn('controller.watch_failed', { resource, kind, status: err instanceof ApiError ? err.status : (err as { statusCode?: number })?.statusCode });
      },
    });
  // A new pool or a new spec is reconciled at once; its own status writes wait for the poll.
  const generations = new Map<string, number>();
  const pools = reflector('renderpools', `/apis/${GROUP}/${VERSION}/namespaces/${namespace}/${PLURAL}`, () => {
    let changed = false;
    for (const pool of pools.items().values()) {
      const uid: string = pool.metadata?.uid ?? pool.metadata?.name;
      if (generations.get(uid) !== pool.metadata?.generation) changed = true;
      generations.set(uid, pool.metadata?.generation);
    }
    if (changed) soon();
  });
  const deployments = reflector('deployments', `/apis/apps/v1/namespaces/${namespace}/deployments`);
  const pods = reflector('pods', `/api/v1/namespaces/${namespace}/pods`);
  const reflectors = [pools, deployments, pods];
  const synced = (): boolean => reflectors.every((r) => r.synced());

  async function pass(): Promise<void> {
    if (!synced()) return;
    const deps = {
      api, namespace, identity: options.identity, now, logger, metrics, readState: options.readState,
      deployments: deployments.items, pods: pods.items, isLeader: leader.isLeader,
    };
    const live = new Set<string>();
    for (const pool of pools.items().values()) {
      if (options.pool !== undefined && pool.metadata?.name !== options.pool) continue;
      const uid: string = pool.metadata?.uid ?? pool.metadata?.name;
      live.add(uid);
      let memory = memories.get(uid);
      if (memory === undefined) memories.set(uid, (memory = { history: [] }));
      try {
        await reconcilePool(deps, pool, memory);
      } catch (err) {
        metrics.writeErrors.inc();
        logger.warn('controller.reconcile_failed', { pool: pool.metadata?.name, status: err instanceof ApiError ? err.status : undefined, message: err instanceof Error ? err.message : 'unknown' });
      }
    }
    for (const uid of memories.keys()) if (!live.has(uid)) memories.delete(uid);
    for (const uid of generations.keys()) if (!live.has(uid)) generations.delete(uid);
  }

  /** Runs one pass at a time; a request during a pass runs one more after it. */
  function reconcile(): Promise<void> {
    if (running !== undefined) {
      again = true;
      return running;
    }
    running = (async () => {
      do {
        again = false;
        await pass();
      } while (again && started);
    })().finally(() => {
      running = undefined;
    });
    return running;
  }

  function soon(): void {
    if (started && options.timers !== false) void reconcile();
  }

  return {
    leader,
    reconcile,
    synced,
    cache: (resource) => ({ renderpools: pools, deployments, pods })[resource].items(),
    async start() {
      started = true;
      for (const r of reflectors) r.start();
      leader.start();
      if (options.timers !== false) {
        timer = setInterval(() => void reconcile(), options.pollMs);
      }
    },
    async stop() {
      started = false;
      clearInterval(timer);
      await running;
      // Released before the watches close: another replica can take over at once.
      await leader.stop();
      await Promise.all(reflectors.map((r) => r.stop()));
    },
    healthy: () => started && synced(),
  };
}
