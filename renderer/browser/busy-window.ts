/**
 * The time-weighted mean of the pool's busy slots over a trailing window, the `busyMean` of
 * `/state` (lib/state-contract.ts; docs/helm.md, "Scaling with the operator"). Exact, not sampled: it keeps the
 * moments the count changed inside the window and integrates between them. Times are given by
 * the caller (milliseconds of a monotonic clock), so it is tested on a fake clock.
 */
export class BusyWindow {
  /** Changes of the count, oldest first; the first one may lie before the window (it gives the count at its start). */
  private readonly changes: Array<{ at: number; busy: number }> = [];

  constructor(
    private readonly windowMs: number,
    private readonly startedAt: number,
  ) {}

  /** The count is `busy` from `at` on. */
  set(busy: number, at: number): void {
    const last = this.changes.at(-1);
    if (last !== undefined && last.at === at) last.busy = busy;
    else this.changes.push({ at, busy });
    this.prune(at);
  }

  /** The mean over the window ending at `at` (since the start, when that is shorter); the count itself at the very start. */
  mean(at: number): number {
    this.prune(at);
    const from = Math.max(at - this.windowMs, this.startedAt);
    if (at <= from) return this.changes.at(-1)?.busy ?? 0;
    let sum = 0;
    let busy = 0;
    let since = from;
    for (const c of this.changes) {
      if (c.at > since) {
        sum += busy * (Math.min(c.at, at) - since);
        since = Math.min(c.at, at);
      }
      busy = c.busy;
    }
    sum += busy * (at - since);
    return sum / (at - from);
  }

  /** Drops changes before the window, keeping the last of them for the count at its start. */
  private prune(at: number): void {
    const from = at - this.windowMs;
    while (this.changes.length > 1 && this.changes[1]!.at <= from) this.changes.shift();
  }
}
