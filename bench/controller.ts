/**
 * The operator's scaling against the HPA's CPU algorithm on one simulated day (docs/helm.md, "Scaling with the
 * operator"). A seeded trace of bursty render traffic (arrivals on a daily curve with bursts,
 * log-normal render times) runs through renderer pods of 2 slots that take 20 s to start; a
 * request that finds every ready slot busy is answered 503 `busy` (no queue, as the renderer).
 * The same trace is scaled at equal settings (min 1, max 40, target 0.6, 300 s down
 * window): by controller/decide.ts reading each pod's `/state` every 5 s (its `busyMean`, the
 * time-weighted mean of its busy slots over the last BUSY_MEAN_WINDOW_MS, computed exactly from
 * the renders' start and end times, as the renderer does), and by the HPA's formula
 * ceil(current × utilisation / target) every 15 s on CPU averaged over the last 30 s (a render
 * uses its slot's CPU, so utilisation is the busy share of ready slots), with its 10% tolerance,
 * its down window and its default up limit (double or +4 pods each sync). Beside the baseline, a
 * reference: the same HPA setting not-yet-ready pods aside as Kubernetes does for CPU (the ratio
 * taken over ready pods; on a rise with pods still starting, those count as idle, and the count
 * holds when that brings the ratio within the tolerance or below 1), which starts fewer pods on a
 * rise than the formula on every replica. Figures for each: the share of requests that met
 * `busy`, pod-seconds (starting and draining pods included) and scale events. Nothing here is timed: the figures are the simulation's, the same on any machine.
 *
 * `npm run bench -- controller [--hours H] [--seed N]`
 */
import { parseArgs } from 'node:util';
import { decide, type Recommendation } from '../controller/decide.ts';
import { SPEC_DEFAULTS, type PoolSpec } from '../controller/spec.ts';
import { BUSY_MEAN_WINDOW_MS } from '../lib/state-contract.ts';
import { printMachine, round2 } from './machine.ts';

const { values: opts } = parseArgs({
  args: process.argv.slice(3),
  options: { hours: { type: 'string', default: '24' }, seed: { type: 'string', default: '7' } },
});
const SECONDS = Math.round(Number(opts.hours) * 3600);
const SEED = Number(opts.seed);
const SLOTS = 2;
const START_S = 20;
const SPEC: PoolSpec = { ...SPEC_DEFAULTS, deploymentName: 'renderer', minReplicas: 1, maxReplicas: 40 };

/** mulberry32: a small seeded generator, so the trace is the same on every run. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Request { at: number; seconds: number }

/** The day's trace: a daily curve (0.3 to 3 req/s), bursts of 3-6x lasting 1-10 min, render times log-normal around 2 s. */
function trace(seed: number): Request[] {
  const r = rng(seed);
  const normal = (): number => Math.sqrt(-2 * Math.log(1 - r())) * Math.cos(2 * Math.PI * r());
  const bursts: Array<{ from: number; to: number; x: number }> = [];
  for (let t = 0; t < SECONDS; t += 600 + Math.floor(r() * 3600)) {
    const len = 60 + Math.floor(r() * 540);
    bursts.push({ from: t, to: t + len, x: 3 + r() * 3 });
  }
  const out: Request[] = [];
  let t = 0;
  while (t < SECONDS) {
    const day = 0.3 + 2.7 * Math.max(0, Math.sin((Math.PI * (t % 86_400)) / 86_400)) ** 2;
    const burst = bursts.find((b) => t >= b.from && t < b.to)?.x ?? 1;
    t += -Math.log(1 - r()) / (day * burst); // exponential gaps at the current rate
    out.push({ at: t, seconds: Math.min(30, Math.exp(Math.log(1.6) + 0.6 * normal())) });
  }
  return out;
}

interface Pod {
  readyAt: number;
  ends: number[];
  draining: boolean;
  /** Busy slot-seconds in each whole second (by its start), for the pod's busyMean. */
  busySeconds: Map<number, number>;
}

const newPod = (readyAt: number): Pod => ({ readyAt, ends: [], draining: false, busySeconds: new Map() });

/** Adds a render from `from` to `to` (seconds) to the pod's busy slot-seconds. */
function addBusy(pod: Pod, from: number, to: number): void {
  for (let s = Math.floor(from); s < to; s++) pod.busySeconds.set(s, (pod.busySeconds.get(s) ?? 0) + Math.min(to, s + 1) - Math.max(from, s));
}

/** The pod's `/state` busyMean at whole second `now`: its busy slot-seconds over the window (since ready, when shorter), divided by the window. */
function busyMean(pod: Pod, now: number): number {
  const from = Math.max(now - BUSY_MEAN_WINDOW_MS / 1000, pod.readyAt);
  for (const s of pod.busySeconds.keys()) if (s < from) pod.busySeconds.delete(s);
  if (now <= from) return pod.ends.filter((e) => e > now).length;
  let sum = 0;
  for (let s = Math.ceil(from); s < now; s++) sum += pod.busySeconds.get(s) ?? 0;
  return sum / (now - from);
}

/** How a scaler chooses: called at its own period with the pods, returns the replicas wanted. */
interface Scaler { periodS: number; choose(now: number, current: number, pods: Pod[], samples: number[]): number }

function simulate(requests: Request[], scaler: Scaler) {
  const pods: Pod[] = [newPod(0)];
  let busyAnswers = 0;
  let podSeconds = 0;
  let events = 0;
  let next = 0;
  /** Each second's busy share of ready slots (the CPU the HPA would see). */
  const samples: number[] = [];
  for (let now = 0; now < SECONDS; now++) {
    for (; next < requests.length && requests[next]!.at < now + 1; next++) {
      const req = requests[next]!;
      let slot: { pod: Pod; i: number } | undefined;
      for (const pod of pods) {
        if (pod.draining || pod.readyAt > req.at) continue;
        const i = pod.ends.length < SLOTS ? pod.ends.length : pod.ends.findIndex((e) => e <= req.at);
        if (i >= 0) {
          slot = { pod, i };
          break;
        }
      }
      if (slot === undefined) busyAnswers += 1;
      else {
        slot.pod.ends[slot.i] = req.at + req.seconds;
        addBusy(slot.pod, req.at, req.at + req.seconds);
      }
    }
    const ready = pods.filter((p) => !p.draining && p.readyAt <= now);
    const busy = ready.reduce((n, p) => n + p.ends.filter((e) => e > now).length, 0);
    samples.push(ready.length === 0 ? 0 : busy / (ready.length * SLOTS));
    // Draining pods leave once their renders end.
    for (let i = pods.length - 1; i >= 0; i--) if (pods[i]!.draining && pods[i]!.ends.every((e) => e <= now)) pods.splice(i, 1);
    podSeconds += pods.length;
    if (now % scaler.periodS !== 0) continue;
    const current = pods.filter((p) => !p.draining).length;
    const want = scaler.choose(now, current, pods, samples);
    if (want === current) continue;
    events += 1;
    if (want > current) for (let i = current; i < want; i++) pods.push(newPod(now + START_S));
    else {
      // Kubernetes removes starting pods first, then (here) the least busy.
      const live = pods.filter((p) => !p.draining).sort((a, b) => (b.readyAt - a.readyAt) || (a.ends.filter((e) => e > now).length - b.ends.filter((e) => e > now).length));
      for (const p of live.slice(0, current - want)) p.draining = true;
    }
  }
  return { busyShare: busyAnswers / requests.length, podSeconds, events };
}

/** The operator: /state every 5 s (busy now, and busyMean over the last BUSY_MEAN_WINDOW_MS), controller/decide.ts. */
function slotScaler(): Scaler {
  let history: Recommendation[] = [];
  return {
    periodS: 5,
    choose(now, current, pods) {
      const readings = pods.filter((p) => !p.draining && p.readyAt <= now).map((p, i) => ({
        name: String(i),
        state: { slots: SLOTS, busy: p.ends.filter((e) => e > now).length, busyMean: busyMean(p, now), guard: 'verified' as const, draining: false },
      }));
      const d = decide({ spec: SPEC, current, readings, now: now * 1000, history });
      history = d.history;
      return d.desired;
    },
  };
}

/** The ratio over every replica: ceil(current × utilisation / target), the baseline. */
function onEveryReplica(ratio: number, current: number): number {
  return Math.abs(ratio - 1) <= 0.1 ? current : Math.ceil(current * ratio);
}

/** The ratio over ready pods, pods still starting counted as idle on a rise (the reference). */
function notReadySetAside(ratio: number, current: number, ready: number): number {
  const starting = current - ready;
  if (starting === 0 || ratio <= 1) return Math.abs(ratio - 1) <= 0.1 ? current : Math.ceil(ready * ratio);
  const withStarting = (ratio * ready) / current;
  return Math.abs(withStarting - 1) <= 0.1 || withStarting < 1 ? current : Math.ceil(withStarting * current);
}

/** The HPA on CPU: every 15 s, utilisation averaged over 30 s, tolerance 0.1, 300 s down window, up by double or +4. */
function hpaScaler(setAside: boolean): Scaler {
  const recs: Array<{ at: number; n: number }> = [];
  return {
    periodS: 15,
    choose(now, current, pods, samples) {
      const window = samples.slice(-30);
      const utilisation = window.reduce((a, b) => a + b, 0) / Math.max(1, window.length);
      const ratio = utilisation / SPEC.targetBusyRatio;
      const ready = pods.filter((p) => !p.draining && p.readyAt <= now).length;
      let rec = setAside ? notReadySetAside(ratio, current, ready) : onEveryReplica(ratio, current);
      rec = Math.min(SPEC.maxReplicas, Math.max(SPEC.minReplicas, rec));
      recs.push({ at: now, n: rec });
      while (recs.length > 0 && recs[0]!.at < now - SPEC.scaleDownStabilizationSeconds) recs.shift();
      const downTo = Math.max(...recs.map((r) => r.n));
      let want = rec < current ? Math.min(current, downTo) : rec;
      want = Math.min(want, Math.max(current * 2, current + 4));
      return want;
    },
  };
}

printMachine();
const requests = trace(SEED);
console.log(`trace: ${round2(SECONDS / 3600)} h, seed ${SEED}, ${requests.length} requests, pods of ${SLOTS} slots starting in ${START_S} s; min ${SPEC.minReplicas}, max ${SPEC.maxReplicas}, target ${SPEC.targetBusyRatio}, down window ${SPEC.scaleDownStabilizationSeconds} s`);
const ours = simulate(requests, slotScaler());
const hpa = simulate(requests, hpaScaler(false));
const ref = simulate(requests, hpaScaler(true));
const line = (name: string, r: typeof ours): void =>
  console.log(`${name}: busy ${round2(r.busyShare * 100)}% of requests, ${Math.round(r.podSeconds)} pod-seconds (${round2(r.podSeconds / SECONDS)} pods on average), ${r.events} scale events`);
line('slots (tintype controller)', ours);
line('HPA on CPU (baseline)     ', hpa);
line('HPA, starting pods aside  ', ref);
const goal = (r: typeof ours): string =>
  `fewer busy answers ${ours.busyShare < r.busyShare ? 'met' : 'MISSED'}; no more pod-seconds ${ours.podSeconds <= r.podSeconds ? 'met' : 'MISSED'}`;
console.log(`goal: ${goal(hpa)} (against the reference: ${goal(ref)})`);
console.log(JSON.stringify({
  bench: 'controller', hours: round2(SECONDS / 3600), seed: SEED, requests: requests.length,
  busy_share: Number(ours.busyShare.toFixed(5)), pod_seconds: Math.round(ours.podSeconds), scale_events: ours.events,
  baseline: 'hpa-cpu', baseline_busy_share: Number(hpa.busyShare.toFixed(5)), baseline_pod_seconds: Math.round(hpa.podSeconds), baseline_scale_events: hpa.events,
  reference: 'hpa-cpu-not-ready-aside', reference_busy_share: Number(ref.busyShare.toFixed(5)), reference_pod_seconds: Math.round(ref.podSeconds), reference_scale_events: ref.events,
}));
