/**
 * Keys' egress policies as policy signs them into leases (docs/security.md "Egress policy per
 * key"). Every replica keeps them all in memory, with the ids of every key it has read, and asks
 * the store every POLL_MS whether any changed (one small read of `egress_generation`), reading
 * them again only then; a check of a known key never waits for the store for them. A key it has
 * not read yet (made since) is looked up once, so a key made with a list never renders without it.
 * A change made with `tintype keys egress` is thereby in every replica's next leases within
 * POLL_MS and a read. When the last answer is older than FRESH_MS (a store slowed by load, or a
 * poll that failed), a check first waits for a read asked within FRESH_MS, so no lease is signed
 * with a list older than that; a store that does not answer it fails the check closed (503 busy).
 */
import type { EgressPolicy } from '../lib/egress.ts';
import type { Logger } from '../lib/log.ts';
import type { EgressStore } from './store/egress-store.ts';

/** How often a replica asks whether a policy changed. */
export const POLL_MS = 200;
/** How old the last answer may be when a lease is signed. */
export const FRESH_MS = 1_000;

export interface EgressPolicies {
  /**
   * Resolves once the lists in memory were read by a query asked within FRESH_MS (at once when
   * they are); rejects when that read fails. Awaited before a check reserves anything.
   */
  fresh(): Promise<void>;
  /** The key's policy as last read, or undefined for none; a key not read yet is looked up now. */
  of(keyId: string): Promise<EgressPolicy | undefined>;
  /** Reads them once, then polls. */
  start(): Promise<void>;
  stop(): void;
}

export function egressPolicies(store: EgressStore, logger: Logger, now: () => number = () => performance.now()): EgressPolicies {
  let byKey = new Map<string, EgressPolicy>();
  let keys = new Set<string>();
  let generation = -1;
  let heardAt = -Infinity;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  // The read under way, joined by whoever needs one asked no earlier than FRESH_MS ago.
  let reading: { asked: number; done: Promise<void> } | undefined;
  const read = async (asked: number): Promise<void> => {
    if ((await store.generation()) !== generation) {
      const got = await store.policies();
      // A slower read asked earlier never replaces what a later one read.
      if (asked < heardAt) return;
      byKey = got.byKey;
      keys = got.keys;
      generation = got.generation;
    }
    // Fresh as of when it was asked, not when the answer came.
    heardAt = Math.max(heardAt, asked);
  };
  const poll = (): Promise<void> => {
    if (reading !== undefined && now() - reading.asked <= FRESH_MS) return reading.done;
    const asked = now();
    const done = read(asked).finally(() => {
      if (reading?.done === done) reading = undefined;
    });
    reading = { asked, done };
    return done;
  };
  // A store that cannot answer is logged and asked again; meanwhile fresh() fails closed.
  const pollLogged = (): Promise<void> => poll().catch((err: unknown) => {
    logger.warn('store_unavailable', { during: 'egress_poll', message: err instanceof Error ? err.message : String(err) });
  });
  const loop = (): void => {
    if (stopped) return;
    timer = setTimeout(() => void pollLogged().finally(loop), POLL_MS);
    timer.unref();
  };
  return {
    async fresh() {
      if (now() - heardAt > FRESH_MS) await poll();
    },
    async of(keyId) {
      if (keys.has(keyId)) return byKey.get(keyId);
      const asked = generation;
      const policy = await store.policyOf(keyId);
      // Kept until the next change reads everything again (a change of this key moves the
      // generation); not kept when one was read meanwhile, which may be newer than this answer.
      if (generation === asked) {
        keys.add(keyId);
        if (policy !== undefined) byKey.set(keyId, policy);
      }
      return policy;
    },
    async start() {
      stopped = false;
      // A store gone after its migrations does not stop the role: its checks answer 503 busy.
      await pollLogged();
      loop();
    },
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
