/**
 * What a policy replica keeps in memory and follows by a generation in a store: keys' egress
 * policies (egress.ts) and, with the counters store, the keys themselves
 * (store/redis/key-cache.ts). One read at a time, joined by whoever needs one asked within
 * FRESH_MS; a check waits for such a read when the last answer is older, so no check is answered
 * from memory older than FRESH_MS, and a store that cannot answer fails it closed (503 busy).
 */

/** How often a replica asks whether anything changed. */
export const POLL_MS = 200;
/** How old the last answer may be when a check relies on it. */
export const FRESH_MS = 1_000;

export interface FreshReads {
  /** Reads now, or joins a read asked within FRESH_MS; rejects when it fails. */
  poll(): Promise<void>;
  /** Resolves at once when the last answer was asked within FRESH_MS, else once poll() does. */
  fresh(): Promise<void>;
}

/**
 * `read(superseded)`: reads and keeps what changed; `superseded()` says, once its answer
 * came, whether a read asked later has answered meanwhile (what it read must not be kept then).
 */
export function freshReads(read: (superseded: () => boolean) => Promise<void>, now: () => number): FreshReads {
  // Fresh as of when a read was asked, not when its answer came.
  let heardAt = -Infinity;
  let reading: { asked: number; done: Promise<void> } | undefined;
  const poll = (): Promise<void> => {
    if (reading !== undefined && now() - reading.asked <= FRESH_MS) return reading.done;
    const asked = now();
    const done = read(() => asked < heardAt)
      .then(() => {
        heardAt = Math.max(heardAt, asked);
      })
      .finally(() => {
        if (reading?.done === done) reading = undefined;
      });
    reading = { asked, done };
    return done;
  };
  return {
    poll,
    async fresh() {
      if (now() - heardAt > FRESH_MS) await poll();
    },
  };
}
