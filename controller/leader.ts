/**
 * Leader election with a coordination.k8s.io/v1 Lease, so that of several replicas only one
 * writes. The holder renews every retry period; another replica takes the Lease only once it
 * has seen it unchanged for a whole lease duration by its own clock. The holder counts itself
 * leader only until its last successful renewal's start plus the renew deadline, which is
 * shorter than the lease duration: it stops writing before the Lease could pass to another.
 */
import type { Logger } from '../lib/log.ts';
import { ApiError, type KubeApi } from './kube/api.ts';
import { microTime } from './kube/time.ts';

export interface LeaderTimings {
  leaseDurationS: number;
  renewDeadlineMs: number;
  retryMs: number;
}

/** The usual timings of Kubernetes controllers: 15 s lease, 10 s renew deadline, 2 s retry. */
export const DEFAULT_LEADER_TIMINGS: LeaderTimings = { leaseDurationS: 15, renewDeadlineMs: 10_000, retryMs: 2_000 };

export interface LeaderOptions {
  api: KubeApi;
  namespace: string;
  name: string;
  identity: string;
  logger: Logger;
  now?: () => number;
  timings?: LeaderTimings;
  /** Whether to renew on a timer (tests drive tick() themselves). */
  timer?: boolean;
}

export interface LeaderElector {
  start(): void;
  /** Stops renewing and releases the Lease if held (SIGTERM). */
  stop(): Promise<void>;
  /** True only while a write may safely go out. */
  isLeader(): boolean;
  /** One attempt to acquire or renew. */
  tick(): Promise<void>;
}

export function createLeaderElector(options: LeaderOptions): LeaderElector {
  const { api, namespace, name, identity, logger } = options;
  const now = options.now ?? Date.now;
  const timings = options.timings ?? DEFAULT_LEADER_TIMINGS;
  if (timings.renewDeadlineMs >= timings.leaseDurationS * 1000) throw new Error('the renew deadline must be shorter than the lease duration');
  const path = `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`;
  let renewedAt: number | undefined; // local time a successful acquire or renewal was sent
  let observed: { version: string; at: number } | undefined;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let ticking: Promise<void> | undefined;

  const leading = (): boolean => !stopped && renewedAt !== undefined && now() < renewedAt + timings.renewDeadlineMs;
  const lose = (why: string): void => {
    if (renewedAt !== undefined) logger.warn('controller.leader_lost', { reason: why });
    renewedAt = undefined;
  };

  const spec = (at: number, acquire: boolean, previous?: any) => ({
    holderIdentity: identity,
    leaseDurationSeconds: timings.leaseDurationS,
    acquireTime: acquire ? microTime(at) : (previous?.acquireTime ?? microTime(at)),
    renewTime: microTime(at),
    leaseTransitions: (previous?.leaseTransitions ?? 0) + (acquire && previous !== undefined ? 1 : 0),
  });

  async function attempt(): Promise<void> {
    const sentAt = now();
    let lease: any;
    try {
      lease = await api.request('GET', `${path}/${name}`);
    } catch (err) {
      if (!(err instanceof ApiError && err.status === 404)) throw err;
      await api.request('POST', path, { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name, namespace }, spec: spec(sentAt, true) });
      renewedAt = sentAt;
      logger.info('controller.leader_acquired', { transitions: 0 });
      return;
    }
    const holder: string | undefined = lease.spec?.holderIdentity || undefined;
    if (holder === identity) {
      await api.request('PUT', `${path}/${name}`, { ...lease, spec: spec(sentAt, false, lease.spec) });
      renewedAt = sentAt;
      return;
    }
    lose('held by another');
    const version = String(lease.metadata?.resourceVersion ?? '');
    if (observed?.version !== version) observed = { version, at: sentAt };
    const durationMs = (Number(lease.spec?.leaseDurationSeconds) || timings.leaseDurationS) * 1000;
    if (holder !== undefined && sentAt < observed.at + durationMs) return;
    // Released, or unchanged for a whole lease duration: take it. A 409 means another was quicker.
    await api.request('PUT', `${path}/${name}`, { ...lease, spec: spec(sentAt, true, lease.spec) });
    renewedAt = sentAt;
    logger.info('controller.leader_acquired', { transitions: (lease.spec?.leaseTransitions ?? 0) + 1 });
  }

  async function tick(): Promise<void> {
    if (stopped) return;
    try {
      await attempt();
    } catch (err) {
      if (err instanceof ApiError && err.status === 409) lose('conflict');
      logger.warn('controller.lease_failed', { status: err instanceof ApiError ? err.status : undefined, message: err instanceof Error ? err.message : 'unknown' });
    }
  }

  const schedule = (): void => {
    timer = setTimeout(() => {
      ticking = tick().finally(() => {
        if (!stopped) schedule();
      });
    }, timings.retryMs);
  };

  return {
    start() {
      if (options.timer === false) return;
      ticking = tick().finally(() => {
        if (!stopped) schedule();
      });
    },
    async stop() {
      const held = leading();
      stopped = true;
      clearTimeout(timer);
      await ticking;
      if (!held) return;
      renewedAt = undefined;
      // Released as Kubernetes controllers release: no holder, and a one-second duration.
      try {
        const lease = await api.request('GET', `${path}/${name}`);
        if (lease.spec?.holderIdentity !== identity) return;
        const at = now();
        await api.request('PUT', `${path}/${name}`, {
          ...lease,
          spec: { leaseDurationSeconds: 1, acquireTime: microTime(at), renewTime: microTime(at), leaseTransitions: lease.spec?.leaseTransitions ?? 0 },
        });
        logger.info('controller.leader_released', {});
      } catch (err) {
        logger.warn('controller.lease_release_failed', { message: err instanceof Error ? err.message : 'unknown' });
      }
    },
    isLeader: leading,
    tick,
  };
}
