/**
 * What crosses between a renderer and the operator (README, "The operator"): the renderer's
 * admin port answers `GET /state` with its slots as they are now, and the controller reads it
 * every poll to decide how many renderers the pool needs.
 *
 * `{"slots":2,"busy":1,"guard":"verified"|"unverified"|"lost","draining":false}`
 * - `guard`: `verified` once the start-up self-test proved the walls; `unverified` before it has
 *   passed; `lost` when the guard stopped answering after it had passed (until it passes again).
 *   Only a verified renderer takes renders, so only its slots count.
 * - `draining`: the renderer is stopping and takes no new render.
 */

/** The admin path of the state report. */
export const STATE_PATH = '/state';

export const GUARD_STATES = ['verified', 'unverified', 'lost'] as const;
export type GuardState = (typeof GUARD_STATES)[number];

/** One renderer's state report. */
export interface RendererStateReport {
  slots: number;
  busy: number;
  guard: GuardState;
  draining: boolean;
}

const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

/** Reads a `/state` body; undefined when it is not a well-formed report (the pod then counts as unreadable). */
export function parseStateReport(body: unknown): RendererStateReport | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const b = body as Record<string, unknown>;
  if (!isCount(b.slots) || !isCount(b.busy) || typeof b.draining !== 'boolean') return undefined;
  if (!(GUARD_STATES as readonly unknown[]).includes(b.guard)) return undefined;
  return { slots: b.slots, busy: Math.min(b.busy, b.slots), guard: b.guard as GuardState, draining: b.draining };
}
