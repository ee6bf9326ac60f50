/**
 * One RenderPool's reconcile, read ▸ decide ▸ write, as the guard's resolve ▸ judge ▸ dial:
 * gather the Deployment and its ready pods from the watched copies and read each pod's
 * `/state`; decide with the pure function; then, only while leader, write what changed: the
 * Deployment's scale subresource, an Event naming from and to, the status subresource.
 */
import type { Logger } from '../lib/log.ts';
import { decide, type Decision, type PodReading, type Recommendation } from './decide.ts';
import { MERGE_PATCH, type KubeApi } from './kube/api.ts';
import { microTime } from './kube/time.ts';
import type { ControllerMetrics } from './metrics.ts';
import { readyPod, selectorMatches } from './pods.ts';
import type { StateReader } from './read-state.ts';
import { CONTROLLER_NAME, GROUP, KIND, PLURAL, readSpec, VERSION } from './spec.ts';
import { buildStatus, sameStatus } from './status.ts';

/** What the controller remembers of a pool between reconciles (lost with leadership: a new leader starts afresh). */
export interface PoolMemory {
  history: Recommendation[];
  lastScaleAt?: number;
  /** Pods already announced as reporting other slots than configured, while they still do. */
  disagreeing?: Set<string>;
}

export interface ReconcileDeps {
  api: KubeApi;
  namespace: string;
  identity: string;
  /** Objects by name, from the watches. */
  deployments: () => Map<string, any>;
  pods: () => Map<string, any>;
  readState: StateReader;
  /** Checked right before each write. */
  isLeader: () => boolean;
  now: () => number;
  logger: Logger;
  metrics: ControllerMetrics;
}

/** Reads, decides, and (as leader) writes for one pool; returns the decision, or undefined when there was nothing to decide on. */
export async function reconcilePool(deps: ReconcileDeps, pool: any, memory: PoolMemory): Promise<Decision | undefined> {
  const { api, namespace, logger, metrics } = deps;
  const name: string = pool.metadata.name;
  const read = readSpec(pool.spec);
  if ('invalid' in read) {
    logger.warn('controller.invalid_pool', { pool: name, detail: read.invalid });
    return undefined;
  }
  const { spec } = read;
  const deployment = deps.deployments().get(spec.deploymentName);
  if (deployment === undefined) {
    logger.warn('controller.no_deployment', { pool: name, deployment: spec.deploymentName });
    return undefined;
  }

  // Read.
  const selector = deployment.spec?.selector;
  const ready = [...deps.pods().values()]
    .filter((p) => selectorMatches(selector, p.metadata?.labels))
    .map(readyPod)
    .filter((p) => p !== undefined);
  const readings: PodReading[] = await Promise.all(ready.map(async (p) =>
    ({ name: p.name, state: await deps.readState(p.adminBase), configuredSlots: p.configuredSlots })));
  for (const r of readings) metrics.stateReads.inc({ outcome: r.state === undefined ? 'unreadable' : 'ok' });

  // Decide.
  const current: number = deployment.spec?.replicas ?? 1;
  const now = deps.now();
  const decision = decide({ spec, current, readings, now, history: memory.history });
  memory.history = decision.history;
  metrics.decisions.inc({ reason: decision.reason });
  logger.info('controller.decision', {
    pool: name, reason: decision.reason, from: current, to: decision.desired, slots: decision.tally.slots,
    busy: decision.tally.busySlots, busy_mean: Math.round(decision.tally.busyMean * 1000) / 1000, unverified: decision.tally.unverifiedPods,
    disagreeing: decision.tally.disagreeing.length, leader: deps.isLeader(),
  });
  await showDisagreeing(deps, pool, readings, decision, memory, now);

  // Write.
  if (decision.desired !== current && deps.isLeader()) {
    await api.request('PATCH', `/apis/apps/v1/namespaces/${namespace}/deployments/${spec.deploymentName}/scale`,
      { spec: { replicas: decision.desired } }, MERGE_PATCH);
    // Until the watch brings the Deployment back, the copy says what was written, so the next
    // reconcile neither writes nor announces the same step twice.
    deployment.spec = { ...deployment.spec, replicas: decision.desired };
    memory.lastScaleAt = now;
    const up = decision.desired > current;
    metrics.scales.inc({ direction: up ? 'up' : 'down' });
    if (deps.isLeader()) await announce(deps, pool, up ? 'ScaledUp' : 'ScaledDown', current, decision, now);
  }
  const status = buildStatus({
    generation: pool.metadata.generation ?? 0,
    replicas: deployment.status?.replicas ?? 0,
    readyPods: ready.length,
    tally: decision.tally,
    desired: decision.desired,
    lastScaleAt: memory.lastScaleAt,
    previous: pool.status,
    now,
  });
  if (!sameStatus(status, pool.status) && deps.isLeader()) {
    const answer = await api.request('PATCH', `/apis/${GROUP}/${VERSION}/namespaces/${namespace}/${PLURAL}/${name}/status`, { status }, MERGE_PATCH);
    pool.status = answer.status ?? status;
  }
  return decision;
}

const round2 = (n: number): number => Math.round(n * 100) / 100;

/**
 * A Warning Event on the RenderPool for each pod that newly reports other slots than its spec
 * configures (once while it keeps doing so, again if it starts again), and the log line with it.
 */
async function showDisagreeing(deps: ReconcileDeps, pool: any, readings: readonly PodReading[], d: Decision, memory: PoolMemory, now: number): Promise<void> {
  const before = memory.disagreeing ?? new Set<string>();
  const current = new Set(d.tally.disagreeing);
  for (const r of readings) {
    if (!current.has(r.name) || before.has(r.name)) continue;
    const note = `pod ${r.name} reports ${r.state?.slots} slots but its spec configures ${r.configuredSlots}; left out of the scale decision`;
    deps.logger.warn('controller.slots_disagree', { pool: pool.metadata.name, pod: r.name, reported: r.state?.slots, configured: r.configuredSlots });
    if (deps.isLeader()) await postEvent(deps, pool, { type: 'Warning', reason: 'SlotsDisagree', action: 'Read', note }, now);
  }
  memory.disagreeing = current;
}

/** A Normal Event on the RenderPool naming from and to. */
async function announce(deps: ReconcileDeps, pool: any, reason: 'ScaledUp' | 'ScaledDown', from: number, d: Decision, now: number): Promise<void> {
  const note = `scaled from ${from} to ${d.desired} replicas (${round2(d.tally.busyMean)} of ${d.tally.slots} usable slots busy on average; ${d.reason})`;
  await postEvent(deps, pool, { type: 'Normal', reason, action: 'Scale', note }, now);
}

/** An Event regarding the RenderPool (events.k8s.io/v1; eventTime is a MicroTime). */
async function postEvent(
  deps: ReconcileDeps, pool: any, e: { type: 'Normal' | 'Warning'; reason: string; action: string; note: string }, now: number,
): Promise<void> {
  const { namespace } = deps;
  try {
    await deps.api.request('POST', `/apis/events.k8s.io/v1/namespaces/${namespace}/events`, {
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      metadata: { generateName: `${pool.metadata.name}.`, namespace },
      eventTime: microTime(now),
      ...e,
      reportingController: `${GROUP}/${CONTROLLER_NAME}`,
      reportingInstance: deps.identity,
      regarding: {
        apiVersion: `${GROUP}/${VERSION}`, kind: KIND, name: pool.metadata.name, namespace,
        uid: pool.metadata.uid, resourceVersion: pool.metadata.resourceVersion,
      },
    });
  } catch (err) {
    // An Event is a courtesy: what it tells already happened, so its failure is logged, not retried.
    deps.logger.warn('controller.event_failed', { reason: e.reason, message: err instanceof Error ? err.message : 'unknown' });
  }
}
