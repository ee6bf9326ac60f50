/**
 * One render per cache key at a time (docs/architecture.md §3, "One render per key"): a miss that
 * arrives while a render of its key is under way, in this process or, with Redis, on another
 * renderer, waits for that render and is answered from the cache entry it leaves (a `hit`: nothing
 * was rendered for that call, spec 2.1), instead of rendering the same page again. A render that
 * ends without an entry (it failed, or its output was too large to keep) is not shared: those
 * waiting for it then render as they would have. Waiting never fails a render; a store that does
 * not answer makes every call render for itself.
 */

/** How a miss goes on: `lead` renders (and calls end() once its entry is stored); else ask the cache again. */
export interface Flight {
  readonly lead: boolean;
  /** Ends a lead: those waiting for it look in the cache. Never throws. */
  end(): Promise<void>;
}

/** Until when a miss may wait, and the client's going away, which ends the wait. */
export interface FlightOptions {
  until: number;
  signal: AbortSignal;
}

/** Joins or starts the flight of `key`. */
export type Flights = (key: string, options: FlightOptions) => Promise<Flight>;

/** A call that renders by itself and has no one to tell. */
export const ALONE: Flight = { lead: true, end: async () => {} };
/** A call that waited for another render of its key: it asks the cache again. */
export const FOLLOWED: Flight = { lead: false, end: async () => {} };

/** Resolves when `done` does, at `until`, or when the signal aborts, whichever is first. */
export function waitFor(done: Promise<void>, options: FlightOptions): Promise<void> {
  return new Promise<void>((resolve) => {
    const finish = (): void => {
      clearTimeout(timer);
      options.signal.removeEventListener('abort', finish);
      resolve();
    };
    const timer = setTimeout(finish, Math.max(0, options.until - Date.now()));
    options.signal.addEventListener('abort', finish, { once: true });
    void done.then(finish, finish);
  });
}

/**
 * Flights within one process: the first miss of a key leads, or asks `across` (another
 * process's flight) whether it leads; the others wait for it without asking anyone.
 */
export function localFlights(across?: Flights): Flights {
  const under = new Map<string, Promise<void>>();
  return async (key, options) => {
    const running = under.get(key);
    if (running !== undefined) {
      await waitFor(running, options);
      return FOLLOWED;
    }
    let done!: () => void;
    const flight = new Promise<void>((resolve) => (done = resolve));
    under.set(key, flight);
    const leave = (): void => {
      if (under.get(key) === flight) under.delete(key);
      done();
    };
    const outer = across === undefined ? ALONE : await across(key, options).catch(() => ALONE);
    if (!outer.lead) {
      leave();
      return FOLLOWED;
    }
    return {
      lead: true,
      end: async () => {
        await outer.end().catch(() => undefined);
        leave();
      },
    };
  };
}
