/**
 * The supervision timers of the pool (docs/operations.md, "Slots and supervision": the memory look, the
 * relaunch back-off, the self-test retry). None holds the process open; stop clears them all.
 */
export class Timers {
  private readonly pending = new Set<NodeJS.Timeout>();

  /** Runs `fn` every `ms`. */
  every(ms: number, fn: () => void): void {
    const t = setInterval(fn, ms);
    t.unref();
    this.pending.add(t);
  }

  /** Runs `fn` once, after `ms`. */
  after(ms: number, fn: () => void): void {
    const t = setTimeout(() => {
      this.pending.delete(t);
      fn();
    }, ms);
    t.unref();
    this.pending.add(t);
  }

  /** Cancels every timer. */
  clear(): void {
    for (const t of this.pending) clearTimeout(t);
    this.pending.clear();
  }
}
