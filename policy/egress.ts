/**
 * Keys' egress policies as policy signs them into leases (docs/security.md "Egress policy per
 * key"). Every replica keeps them all in memory, with the ids of every key it has read, and asks
 * the store every POLL_MS whether any changed (one small read of `egress_generation`), reading
 * them again only then; a check of a known key never waits for the store for them. A key it has
 * not read yet (made since) is looked up once, so a key made with a list never renders without it.
 * A change made with `tintype keys egress` is thereby in every replica's next leases within
 * POLL_MS and a read (policy/fresh-reads.ts: no lease is signed with lists older than FRESH_MS;
 * a check waits for a newer read when they are, and a store that does not answer fails it closed).
 */
import type { EgressPolicy } from '../lib/egress.ts';
import type { Logger } from '../lib/log.ts';
import type { EgressStore } from './store/egress-store.ts';
import { freshReads, POLL_MS } from './fresh-reads.ts';

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
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const { poll, fresh } = freshReads(async (superseded) => {
    if ((await store.generation()) === generation) return;
    const got = await store.policies();
    // A slower read asked earlier never replaces what a later one read.
    if (superseded()) return;
    byKey = got.byKey;
    keys = got.keys;
    generation = got.generation;
  }, now);
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
    fresh,
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
