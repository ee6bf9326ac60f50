/**
 * Keys as every replica of the Redis store holds them (docs/architecture.md §2 "The counters
 * store"): found by hash in PostgreSQL once, then answered from memory. Every change of a key
 * (made, revoked) moves a generation in Redis; each replica asks for it every POLL_MS and forgets
 * what it holds when it moved, so a revocation reaches every replica within POLL_MS and a round
 * trip. As for egress lists (policy/fresh-reads.ts): when the last answer is older than FRESH_MS, a
 * check first waits for a newer one, and a counters store that cannot give one fails the check
 * closed (503 busy), so no check is answered from keys older than FRESH_MS.
 */
import { freshReads, POLL_MS } from '../../fresh-reads.ts';
import type { KeyRecord } from '../store.ts';

/** Hashes remembered at most (known keys and unknown hashes alike); past it the memory starts again. */
export const KEY_CACHE_ENTRIES = 500_000;

export interface KeyCacheSource {
  /** The key whose secret hashes to `hash`, from PostgreSQL. */
  lookup(hash: string): Promise<KeyRecord | undefined>;
  /** The generation now (Redis). */
  generation(): Promise<string>;
}

export interface KeyCache {
  /** Resolves once the generation was read within FRESH_MS; rejects when that read fails. */
  fresh(): Promise<void>;
  find(hash: string): Promise<KeyRecord | undefined>;
  /** Forgets everything now (this replica changed a key; the others follow the generation). */
  forget(): void;
  stop(): void;
}

export function keyCache(source: KeyCacheSource, now: () => number = () => performance.now()): KeyCache {
  let byHash = new Map<string, KeyRecord | null>();
  let generation: string | undefined;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const { poll, fresh } = freshReads(async () => {
    const g = await source.generation();
    if (g !== generation) {
      byHash = new Map();
      generation = g;
    }
  }, now);
  // Polls only once asked for a key: a short-lived command that never checks starts no timer.
  const loop = (): void => {
    if (stopped || timer !== undefined) return;
    timer = setTimeout(() => {
      timer = undefined;
      // A failed poll leaves the answer old; the next check then waits for (and fails on) its own read.
      void poll().catch(() => {}).finally(loop);
    }, POLL_MS);
    timer.unref();
  };
  return {
    async fresh() {
      loop();
      await fresh();
    },
    async find(hash) {
      const known = byHash.get(hash);
      if (known !== undefined) return known ?? undefined;
      const held = byHash;
      const key = await source.lookup(hash);
      // Not kept when the generation moved meanwhile: the answer may predate the change.
      if (held === byHash) {
        if (byHash.size >= KEY_CACHE_ENTRIES) byHash = new Map();
        byHash.set(hash, key ?? null);
      }
      return key;
    },
    forget() {
      byHash = new Map();
    },
    stop() {
      stopped = true;
      clearTimeout(timer);
      timer = undefined;
    },
  };
}
