/**
 * What crosses between a renderer and the operator (README, "The operator"): the renderer's
 * admin port answers `GET /state` with its slots, and the controller reads it every poll to
 * decide how many renderers the pool needs.
 *
 * `{"slots":2,"busy":1,"busyMean":0.73,"guard":"verified"|"unverified"|"lost","draining":false,"sandbox":true}`
 * - `busy`: slots rendering at this moment.
 * - `busyMean`: busy slots averaged over time across the last `BUSY_MEAN_WINDOW_MS` (or since the
 *   renderer started, when that is shorter). The operator scales on it: a moment's count of
 *   renders is noisy, and its highest value over a down window holds far more pods than the load
 *   needs. A report without it (a renderer from before the field) reads as `busy`.
 * - `guard`: `verified` once the start-up self-test proved the walls; `unverified` before it has
 *   passed; `lost` when the guard stopped answering after it had passed (until it passes again).
 *   Only a verified renderer takes renders, so only its slots count.
 * - `draining`: the renderer is stopping and takes no new render.
 * - `sandbox`: Chromium runs with its own sandbox (user namespaces); false when it runs with
 *   `--no-sandbox` (the renderer's start-up log says why: `browser.sandbox_off`), or before its
 *   first browser said. Shown, not scaled on; absent from a renderer from before the field.
 */

/** The admin path of the state report. */
export const STATE_PATH = '/state';

/**
 * The span `busyMean` averages over: two of the operator's default polls. `npm run bench --
 * controller` measured the trade: a shorter span answers fewer requests `busy` but keeps more
 * pods (its readings are noisier, and the down window holds their highest), a longer one the
 * reverse; at 10 s the operator answers fewer `busy` than the HPA on CPU on fewer pod-seconds,
 * with room to spare (README, "The operator").
 */
export const BUSY_MEAN_WINDOW_MS = 10_000;

export const GUARD_STATES = ['verified', 'unverified', 'lost'] as const;
export type GuardState = (typeof GUARD_STATES)[number];

/** One renderer's state report. */
export interface RendererStateReport {
  slots: number;
  busy: number;
  busyMean: number;
  guard: GuardState;
  draining: boolean;
  /** Absent in a report from a renderer before the field. */
  sandbox?: boolean;
}

const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
const isMean = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v) && v >= 0;

/** Reads a `/state` body; undefined when it is not a well-formed report (the pod then counts as unreadable). */
export function parseStateReport(body: unknown): RendererStateReport | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const b = body as Record<string, unknown>;
  if (!isCount(b.slots) || !isCount(b.busy) || typeof b.draining !== 'boolean') return undefined;
  if (b.busyMean !== undefined && !isMean(b.busyMean)) return undefined;
  if (!(GUARD_STATES as readonly unknown[]).includes(b.guard)) return undefined;
  if (b.sandbox !== undefined && typeof b.sandbox !== 'boolean') return undefined;
  const busy = Math.min(b.busy, b.slots);
  const busyMean = b.busyMean === undefined ? busy : Math.min(b.busyMean, b.slots);
  return {
    slots: b.slots,
    busy,
    busyMean,
    guard: b.guard as GuardState,
    draining: b.draining,
    ...(b.sandbox === undefined ? {} : { sandbox: b.sandbox as boolean }),
  };
}
