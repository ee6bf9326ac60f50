/**
 * The scale decision as a table with a fake clock (docs/helm.md, "How it decides"). Each row
 * is a scenario: the pods' readings, the spec, the count now, and (for the windows) earlier
 * decisions replayed at earlier moments of the same clock.
 */
import t from 'tap';
import { decide, type Decision, type PodReading, type Recommendation } from '../../controller/decide.ts';
import { SPEC_DEFAULTS, type PoolSpec } from '../../controller/spec.ts';
import type { RendererStateReport } from '../../lib/state-contract.ts';

const spec = (over: Partial<PoolSpec> = {}): PoolSpec => ({ deploymentName: 'renderer', ...SPEC_DEFAULTS, ...over });

/** `n` verified pods of 2 slots with `busy` busy slots spread over them, busy as much on average over the last seconds (a steady load). */
function pods(n: number, busy: number, extra: Partial<RendererStateReport> = {}): PodReading[] {
  return Array.from({ length: n }, (_, i) => {
    const b = Math.max(0, Math.min(2, busy - 2 * i));
    return { name: `p${i}`, state: { slots: 2, busy: b, busyMean: b, guard: 'verified', draining: false, ...extra } };
  });
}

/** One verified pod of 2 slots, `busy` busy now and `busyMean` on average over the last seconds. */
const pod = (name: string, busy: number, busyMean: number): PodReading =>
  ({ name, state: { slots: 2, busy, busyMean, guard: 'verified', draining: false } });

const S = 1000;

interface Row {
  name: string;
  spec?: Partial<PoolSpec>;
  current: number;
  readings: PodReading[];
  history?: Recommendation[];
  now?: number;
  desired: number;
  reason: Decision['reason'];
}

const NOW = 1_000_000 * S;

const rows: Row[] = [
  // Rising load (target 0.6 of 2 slots = 1.2 busy per pod).
  { name: 'idle pool at min stays', current: 1, readings: pods(1, 0), desired: 1, reason: 'steady' },
  { name: '1 busy of 2 fits one pod', current: 1, readings: pods(1, 1), desired: 1, reason: 'steady' },
  { name: '2 busy of 2 wants 2 pods: up at once', current: 1, readings: pods(1, 2), desired: 2, reason: 'scale_up' },
  { name: '4 busy on 2 pods wants 4: up at once', current: 2, readings: pods(2, 4), desired: 4, reason: 'scale_up' },
  { name: 'exactly at target (6 of 10 busy on 5 pods) holds', current: 5, readings: pods(5, 6), desired: 5, reason: 'steady' },
  { name: 'one over target (7 of 10 busy) adds one', current: 5, readings: pods(5, 7), desired: 6, reason: 'scale_up' },
  // The mean over the last seconds decides, not the count of the moment.
  { name: 'both slots busy this moment but 0.5 on average: no scale up', current: 1, readings: [pod('p0', 2, 0.5)], desired: 1, reason: 'steady' },
  { name: 'one slot busy this moment but 1.3 on average: up to 2', current: 1, readings: [pod('p0', 1, 1.3)], desired: 2, reason: 'scale_up' },
  { name: 'mean exactly at target (1.2 of 2 on one pod) holds', current: 1, readings: [pod('p0', 2, 1.2)], desired: 1, reason: 'steady' },
  { name: 'mean just over target (1.201) adds a pod', current: 1, readings: [pod('p0', 1, 1.201)], desired: 2, reason: 'scale_up' },
  {
    name: 'idle this moment but busy on average: no scale down (2.4 over 4 pods wants 2)', current: 2,
    readings: [pod('p0', 0, 1.2), pod('p1', 0, 1.2)], history: [], desired: 2, reason: 'steady',
  },
  {
    name: 'means are summed over usable pods (0.7 + 0.6 + 1.1 = 2.4 wants 2)', current: 3,
    readings: [pod('p0', 2, 0.7), pod('p1', 2, 0.6), pod('p2', 2, 1.1)], history: [], desired: 2, reason: 'scale_down',
  },
  // Doubling cap: limit - 1, limit, limit + 1.
  { name: 'up to 3 from 2 (under double)', spec: { targetBusyRatio: 1 }, current: 2, readings: [...pods(2, 4), ...pods(0, 0)], history: [], desired: 2, reason: 'steady' },
  { name: 'up to exactly double', spec: { targetBusyRatio: 0.5 }, current: 2, readings: pods(2, 4), desired: 4, reason: 'scale_up' },
  { name: 'up past double is capped at double', spec: { targetBusyRatio: 0.25 }, current: 2, readings: pods(2, 4), desired: 4, reason: 'up_capped' },
  { name: 'from 3 at most 6', spec: { targetBusyRatio: 0.1 }, current: 3, readings: pods(3, 6), desired: 6, reason: 'up_capped' },
  // Bounds.
  { name: 'max caps the recommendation', spec: { maxReplicas: 3 }, current: 2, readings: pods(2, 4), desired: 3, reason: 'scale_up' },
  { name: 'at max with more load holds at max', spec: { maxReplicas: 3 }, current: 3, readings: pods(3, 6), desired: 3, reason: 'steady' },
  { name: 'below min goes to min at once', spec: { minReplicas: 3 }, current: 1, readings: pods(1, 0), desired: 3, reason: 'bounds' },
  { name: 'above max goes to max at once', spec: { maxReplicas: 4 }, current: 9, readings: pods(9, 0), desired: 4, reason: 'bounds' },
  // Halving one pod leaves one: the operator does not go to zero on its own, having nothing to read there.
  { name: 'min 0 with no load stays at one pod', spec: { minReplicas: 0, scaleDownStabilizationSeconds: 0 }, current: 1, readings: pods(1, 0), desired: 1, reason: 'down_capped' },
  { name: 'min 0 from two with no load goes to one', spec: { minReplicas: 0, scaleDownStabilizationSeconds: 0 }, current: 2, readings: pods(2, 0), desired: 1, reason: 'down_capped' },
  // An unverified or lost guard offers no slots; neither does a draining pod.
  {
    name: 'an unverified pod offers no slots (3 usable pods, 4 busy -> 4)', current: 4,
    readings: [...pods(3, 4), { name: 'u', state: { slots: 2, busy: 0, busyMean: 0, guard: 'unverified', draining: false } }], desired: 4, reason: 'steady',
  },
  {
    name: 'a lost guard offers no slots: the busy share of the others decides', current: 2,
    readings: [...pods(1, 2), { name: 'l', state: { slots: 2, busy: 0, busyMean: 0, guard: 'lost', draining: false } }], desired: 2, reason: 'steady',
  },
  {
    name: 'unverified pods do not lower the per-pod slots', current: 2,
    readings: [...pods(1, 2), { name: 'u', state: { slots: 8, busy: 0, busyMean: 0, guard: 'unverified', draining: false } }],
    history: [], desired: 2, reason: 'steady',
  },
  {
    name: 'a draining pod offers no slots and its renders do not count', current: 2,
    readings: [...pods(1, 2), { name: 'd', state: { slots: 2, busy: 2, busyMean: 2, guard: 'verified', draining: true } }], desired: 2, reason: 'steady',
  },
  { name: 'an unreadable pod offers no slots', current: 2, readings: [...pods(1, 2), { name: 'x', state: undefined }], desired: 2, reason: 'steady' },
  // Nothing to read: hold.
  { name: 'zero ready pods: hold the count', current: 3, readings: [], desired: 3, reason: 'no_reading' },
  { name: 'only unverified pods: hold the count', current: 2, readings: pods(2, 0, { guard: 'unverified' }), desired: 2, reason: 'no_reading' },
  { name: 'zero pods at min 0 stays 0', spec: { minReplicas: 0 }, current: 0, readings: [], desired: 0, reason: 'no_reading' },
  // Falling load, inside and past the down window (300 s).
  {
    name: 'falling load inside the down window holds at the highest recommendation', current: 4, readings: pods(4, 1),
    history: [{ at: NOW - 120 * S, replicas: 4 }], desired: 4, reason: 'held_by_down_window',
  },
  {
    name: 'falling load: down to the highest recommendation still inside the window', current: 4, readings: pods(4, 1),
    history: [{ at: NOW - 400 * S, replicas: 4 }, { at: NOW - 100 * S, replicas: 3 }], desired: 3, reason: 'scale_down',
  },
  {
    name: 'falling load at exactly the window edge still holds', current: 4, readings: pods(4, 1),
    history: [{ at: NOW - 300 * S, replicas: 4 }], desired: 4, reason: 'held_by_down_window',
  },
  {
    name: 'falling load past the window goes down (halving allows 2)', current: 4, readings: pods(4, 1),
    history: [{ at: NOW - 301 * S, replicas: 4 }], desired: 2, reason: 'down_capped',
  },
  {
    name: 'halving cap: from 8 no lower than 4', current: 8, readings: pods(8, 0),
    history: [{ at: NOW - 301 * S, replicas: 8 }], desired: 4, reason: 'down_capped',
  },
  {
    name: 'halving cap: from 5 no lower than 3', current: 5, readings: pods(5, 0),
    history: [], desired: 3, reason: 'down_capped',
  },
  { name: 'down by exactly half is allowed', current: 4, readings: pods(4, 2), history: [], desired: 2, reason: 'scale_down' },
  // Up window.
  {
    name: 'up window: load high only now holds', spec: { scaleUpStabilizationSeconds: 60 }, current: 1, readings: pods(1, 2),
    history: [{ at: NOW - 30 * S, replicas: 1 }], desired: 1, reason: 'held_by_up_window',
  },
  {
    name: 'up window: load high for the whole window goes up', spec: { scaleUpStabilizationSeconds: 60 }, current: 1, readings: pods(1, 2),
    history: [{ at: NOW - 61 * S, replicas: 1 }, { at: NOW - 30 * S, replicas: 2 }], desired: 2, reason: 'scale_up',
  },
];

for (const row of rows) {
  t.test(row.name, async (t) => {
    const d = decide({ spec: spec(row.spec), current: row.current, readings: row.readings, now: row.now ?? NOW, history: row.history ?? [] });
    t.equal(d.desired, row.desired, 'desired');
    t.equal(d.reason, row.reason, 'reason');
  });
}

t.test('a sequence on one clock: rise, hold inside the window, fall after it', async (t) => {
  let history: Recommendation[] = [];
  let current = 1;
  let now = NOW;
  const step = (busy: number, advanceS: number): Decision => {
    now += advanceS * S;
    const d = decide({ spec: spec(), current, readings: pods(current, busy), now, history });
    history = d.history;
    current = d.desired;
    return d;
  };
  t.equal(step(2, 0).desired, 2, '1 -> 2');
  t.equal(step(4, 5).desired, 4, '2 -> 4');
  t.equal(step(4, 5).desired, 4, 'steady at 4');
  t.equal(step(0, 5).reason, 'held_by_down_window', 'load gone: held');
  t.equal(step(0, 200).desired, 4, 'still held 205 s after the last high reading');
  const after = step(0, 100);
  t.equal(after.desired, 2, 'past 300 s: down, by half at most');
  t.equal(step(0, 5).desired, 1, 'then to min');
  t.ok(history.every((r) => now - r.at <= 300 * S), 'old recommendations are forgotten');
});

t.test('the tally reports usable slots, busy slots now and on average, and unverified pods', async (t) => {
  const d = decide({
    spec: spec(), current: 3, now: NOW, history: [],
    readings: [pod('p0', 2, 0.5), pod('p1', 1, 1.25), { name: 'u', state: { slots: 2, busy: 1, busyMean: 1, guard: 'lost', draining: false } }],
  });
  t.same(d.tally, { usablePods: 2, slots: 4, busySlots: 3, busyMean: 1.75, unverifiedPods: 1, drainingPods: 0, unreadablePods: 0 });
});
