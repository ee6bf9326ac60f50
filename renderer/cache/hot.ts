/**
 * The most recently used cache entries, held in memory in front of the file cache (file.ts).
 * A cache hit is the cheapest answer the service gives (spec Part 8 rule 3: metered, no render),
 * so it should not pay for open, stat, read and close each time: a hit on a hot entry touches
 * no file. Bounded in bytes; the least recently used entries leave first. It holds only what
 * the file cache holds: the file cache removes an entry here whenever it removes the file.
 */

/** One hot entry: the body as served, with what a lookup checks (key, expiry). */
export interface HotEntry {
  key: string;
  body: Buffer;
  contentType: string;
  expiresAt: number;
}

/** Bytes of hot entries by default: small next to the file cache, enough for the busiest answers. */
export const DEFAULT_HOT_BYTES = 32 * 2 ** 20;

/** An LRU map of entries by file name, bounded by the bytes of their bodies. */
export class HotEntries {
  private readonly maxBytes: number;
  /** Least recently used first (Map keeps insertion order; a use moves an entry to the end). */
  private readonly entries = new Map<string, HotEntry>();
  private total = 0;

  constructor(maxBytes: number) {
    this.maxBytes = maxBytes;
  }

  /** Bytes held. */
  size(): number {
    return this.total;
  }

  get(name: string): HotEntry | undefined {
    const e = this.entries.get(name);
    if (e === undefined) return undefined;
    this.entries.delete(name);
    this.entries.set(name, e);
    return e;
  }

  /** Holds `entry` under `name`, replacing what was there; an entry over an eighth of the bound is not held. */
  set(name: string, entry: HotEntry): void {
    this.delete(name);
    if (entry.body.length > this.maxBytes / 8) return;
    this.entries.set(name, entry);
    this.total += entry.body.length;
    for (const [oldest, e] of this.entries) {
      if (this.total <= this.maxBytes) break;
      this.entries.delete(oldest);
      this.total -= e.body.length;
    }
  }

  delete(name: string): void {
    const e = this.entries.get(name);
    if (e === undefined) return;
    this.entries.delete(name);
    this.total -= e.body.length;
  }

  clear(): void {
    this.entries.clear();
    this.total = 0;
  }
}
