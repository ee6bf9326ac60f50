/**
 * The RenderPool's status and its conditions (docs/helm.md, "Reading `kubectl get rp`"): figures from the
 * last reading and decision, and three conditions in the metav1.Condition shape. A condition's
 * lastTransitionTime moves only when its status does, so an unchanged pool writes nothing.
 */
import type { Tally } from './decide.ts';
import { time } from './kube/time.ts';

export interface Condition {
  type: 'Available' | 'Busy' | 'GuardVerified';
  status: 'True' | 'False' | 'Unknown';
  observedGeneration: number;
  lastTransitionTime: string;
  reason: string;
  message: string;
}

export interface PoolStatus {
  observedGeneration: number;
  replicas: number;
  readyReplicas: number;
  slots: number;
  busySlots: number;
  unverifiedPods: number;
  desiredReplicas: number;
  lastScaleTime?: string;
  conditions: Condition[];
}

const pods = (n: number): string => `${n} pod${n === 1 ? '' : 's'}`;

export interface StatusInput {
  generation: number;
  /** The Deployment's status.replicas. */
  replicas: number;
  /** Running and Ready pods read this time. */
  readyPods: number;
  tally: Tally;
  desired: number;
  /** Epoch ms of the last scale write, if any. */
  lastScaleAt: number | undefined;
  previous: Partial<PoolStatus> | undefined;
  now: number;
}

/** The status to write, reusing the previous lastTransitionTime of every condition whose status did not change. */
export function buildStatus(input: StatusInput): PoolStatus {
  const { tally: t, generation } = input;
  const previous = new Map((input.previous?.conditions ?? []).map((c) => [c.type, c]));
  const condition = (type: Condition['type'], ok: boolean, reason: string, message: string): Condition => {
    const status = ok ? 'True' : 'False';
    const before = previous.get(type);
    const lastTransitionTime = before?.status === status && before.lastTransitionTime ? before.lastTransitionTime : time(input.now);
    return { type, status, observedGeneration: generation, lastTransitionTime, reason, message };
  };
  const conditions = [
    t.usablePods > 0
      ? condition('Available', true, 'VerifiedPodsReady', `${pods(t.usablePods)} ready with a verified guard`)
      : condition('Available', false, 'NoVerifiedPods', `no ready pod with a verified guard (${pods(input.readyPods)} ready)`),
    t.slots > 0 && t.busySlots >= t.slots
      ? condition('Busy', true, 'AllSlotsBusy', `all ${t.slots} usable slots were busy at the last reading`)
      : condition('Busy', false, t.slots === 0 ? 'NoUsableSlots' : 'SlotsFree', `${t.busySlots} of ${t.slots} usable slots were busy at the last reading`),
    t.unverifiedPods > 0
      ? condition('GuardVerified', false, 'GuardUnverified', `${pods(t.unverifiedPods)} ready with a guard unverified or lost; their slots do not count`)
      : condition('GuardVerified', true, 'GuardVerified', `every ready pod's guard is verified`),
  ];
  const lastScaleTime = input.lastScaleAt !== undefined ? time(input.lastScaleAt) : input.previous?.lastScaleTime;
  return {
    observedGeneration: generation,
    replicas: input.replicas,
    readyReplicas: input.readyPods,
    slots: t.slots,
    busySlots: t.busySlots,
    unverifiedPods: t.unverifiedPods,
    desiredReplicas: input.desired,
    ...(lastScaleTime !== undefined ? { lastScaleTime } : {}),
    conditions,
  };
}

/** Deep equality of two statuses as JSON (key order aside). */
export function sameStatus(a: unknown, b: unknown): boolean {
  const norm = (v: unknown): unknown =>
    Array.isArray(v) ? v.map(norm) : v !== null && typeof v === 'object'
      ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, norm((v as Record<string, unknown>)[k])]))
      : v;
  return JSON.stringify(norm(a)) === JSON.stringify(norm(b));
}
