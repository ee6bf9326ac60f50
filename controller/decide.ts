/**
 * The scale decision (docs/helm.md, "How it decides"): a pure function of the readings, the
 * spec, the current replica count, the clock and the recommendations remembered from earlier
 * decisions. No I/O: the reconcile loop reads, calls this, then writes what it says.
 *
 *   desired = clamp(ceil(busyMean / (targetBusyRatio × slots per usable pod)), min, max)
 *
 * `busyMean` is the usable pods' busy slots averaged over the last seconds (lib/state-contract.ts),
 * not the count of one moment: the down window keeps the highest recommendation of five minutes,
 * and the highest of sixty momentary counts holds far more pods than the load needs. A usable pod
 * is ready, readable, not draining, and its guard is verified; the others offer no slots. Up at
 * once (or to the lowest recommendation of the up window), down only to the highest
 * recommendation of the down window; never more than double, nor down more than half, in one
 * step.
 */
import type { RendererStateReport } from '../lib/state-contract.ts';
import type { PoolSpec } from './spec.ts';

/** One ready pod's reading: its `/state`, or undefined when it could not be read. */
export interface PodReading {
  name: string;
  state: RendererStateReport | undefined;
}

/** A recommendation made at a moment, remembered for the stabilization windows. */
export interface Recommendation {
  at: number;
  replicas: number;
}

export interface DecisionInput {
  spec: PoolSpec;
  /** The Deployment's spec.replicas now. */
  current: number;
  /** Readings of the Running and Ready pods. */
  readings: readonly PodReading[];
  /** Epoch ms. */
  now: number;
  /** Recommendations of earlier decisions (the output's `history` of the previous call). */
  history: readonly Recommendation[];
}

/** Why the decision is what it is: a bounded vocabulary, usable as a metric label. */
export type DecisionReason =
  | 'steady' // the load fits the current count
  | 'scale_up'
  | 'scale_down'
  | 'up_capped' // more was wanted than doubling allows
  | 'down_capped' // less was wanted than halving allows
  | 'held_by_down_window' // the load fell, but a higher recommendation is inside the down window
  | 'held_by_up_window' // the load rose, but not for the whole up window
  | 'no_reading' // no usable pod to read the load from: hold
  | 'bounds'; // the count was outside [min, max]

export const DECISION_REASONS: readonly DecisionReason[] = [
  'steady', 'scale_up', 'scale_down', 'up_capped', 'down_capped', 'held_by_down_window', 'held_by_up_window', 'no_reading', 'bounds',
];

/** What the readings add up to; also the status's figures. */
export interface Tally {
  /** Pods whose reading counts: ready, readable, not draining, guard verified. */
  usablePods: number;
  /** Slots of the usable pods. */
  slots: number;
  /** Busy slots of the usable pods at the reading. */
  busySlots: number;
  /** Busy slots of the usable pods averaged over the last seconds (the sum of their `busyMean`): what the decision scales on. */
  busyMean: number;
  /** Ready pods whose guard is unverified or lost. */
  unverifiedPods: number;
  drainingPods: number;
  unreadablePods: number;
}

export interface Decision {
  desired: number;
  reason: DecisionReason;
  /** The load's own recommendation, before windows and caps (clamped to the bounds). */
  recommended: number | undefined;
  tally: Tally;
  /** Recommendations to pass to the next call. */
  history: Recommendation[];
}

/** Sums the readings. */
export function tally(readings: readonly PodReading[]): Tally {
  const t: Tally = { usablePods: 0, slots: 0, busySlots: 0, busyMean: 0, unverifiedPods: 0, drainingPods: 0, unreadablePods: 0 };
  for (const { state } of readings) {
    if (state === undefined) t.unreadablePods += 1;
    else if (state.guard !== 'verified') t.unverifiedPods += 1;
    else if (state.draining) t.drainingPods += 1;
    else {
      t.usablePods += 1;
      t.slots += state.slots;
      t.busySlots += state.busy;
      t.busyMean += state.busyMean;
    }
  }
  return t;
}

const clamp = (n: number, min: number, max: number): number => Math.min(max, Math.max(min, n));

/** The decision for one RenderPool at `input.now`. */
export function decide(input: DecisionInput): Decision {
  const { spec, current, now } = input;
  const t = tally(input.readings);
  const keepFor = Math.max(spec.scaleUpStabilizationSeconds, spec.scaleDownStabilizationSeconds) * 1000;
  const kept = input.history.filter((r) => now - r.at <= keepFor && r.at <= now);
  const done = (desired: number, reason: DecisionReason, recommended: number | undefined, history: Recommendation[]): Decision =>
    ({ desired, reason, recommended, tally: t, history });

  // A count outside the bounds goes to the bound at once: the spec asks for it explicitly.
  if (current < spec.minReplicas || current > spec.maxReplicas) {
    return done(clamp(current, spec.minReplicas, spec.maxReplicas), 'bounds', undefined, kept);
  }
  if (t.usablePods === 0 || t.slots === 0) return done(current, 'no_reading', undefined, kept);

  const slotsPerPod = t.slots / t.usablePods;
  // Rounded to a millionth first so that float error in the product cannot add a pod.
  const raw = Math.ceil(Math.round((t.busyMean / (spec.targetBusyRatio * slotsPerPod)) * 1e6) / 1e6);
  const recommended = clamp(raw, spec.minReplicas, spec.maxReplicas);
  const history = [...kept, { at: now, replicas: recommended }];

  const inWindow = (seconds: number): number[] =>
    history.filter((r) => now - r.at <= seconds * 1000).map((r) => r.replicas);
  // Up: only as far as the load stayed for the whole up window (just now when it is 0).
  const upTo = Math.min(...inWindow(spec.scaleUpStabilizationSeconds));
  // Down: no lower than the highest recommendation of the down window.
  const downTo = Math.max(...inWindow(spec.scaleDownStabilizationSeconds));

  if (recommended > current) {
    if (upTo <= current) return done(current, 'held_by_up_window', recommended, history);
    const cap = Math.max(current * 2, 1);
    return upTo > cap ? done(cap, 'up_capped', recommended, history) : done(upTo, 'scale_up', recommended, history);
  }
  if (recommended < current) {
    if (downTo >= current) return done(current, 'held_by_down_window', recommended, history);
    const floor = Math.max(Math.ceil(current / 2), spec.minReplicas);
    return downTo < floor ? done(floor, 'down_capped', recommended, history) : done(downTo, 'scale_down', recommended, history);
  }
  return done(current, 'steady', recommended, history);
}
