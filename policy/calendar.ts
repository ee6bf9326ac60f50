/**
 * Time arithmetic of the limits: fixed 60-second burst windows and UTC calendar months
 * (spec Part 8). Pure functions of an epoch-milliseconds instant so tests drive them with a
 * fake clock.
 */

/** Milliseconds since the epoch; injected so tests can pin it. */
export type Clock = () => number;
export const systemClock: Clock = () => Date.now();

export const WINDOW_SEC = 60;
const WINDOW_MS = WINDOW_SEC * 1000;

/** Start (epoch ms) of the fixed 60-second window holding `now`. */
export function windowStart(now: number): number {
  return Math.floor(now / WINDOW_MS) * WINDOW_MS;
}

/** Whole seconds until the window holding `now` ends, at least 1 (spec Part 7 `retryAfterSec`). */
export function secondsToWindowEnd(now: number): number {
  return Math.max(1, Math.ceil((windowStart(now) + WINDOW_MS - now) / 1000));
}

/** The UTC calendar month holding `now`, as `YYYY-MM`. */
export function monthOf(now: number): string {
  const d = new Date(now);
  return `${String(d.getUTCFullYear()).padStart(4, '0')}-${String(d.getUTCMonth() + 1).padStart(2, '0')}`;
}

/** The `YYYY-MM` month `n` months after `month` (before it when `n` is negative). */
export function addMonths(month: string, n: number): string {
  const [y, m] = month.split('-').map(Number) as [number, number];
  return monthOf(Date.UTC(y, m - 1 + n, 1));
}

/** First instant of the UTC month after the one holding `now`, ISO 8601 (spec Part 7 `resetsAt`). */
export function nextMonthStart(now: number): string {
  const d = new Date(now);
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1)).toISOString();
}
