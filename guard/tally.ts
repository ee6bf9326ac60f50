/**
 * Refusals counted per render (docs/architecture.md §7 rule 8; spec 2.1 `x-render-blocked`). Keyed by the
 * render's unguessable token, so a render can only read or reset its own count by knowing its
 * own token; only tokens a renderer made name a render (lib/render-token.ts), so nothing without
 * the key can make entries that push a render's out. Only refusals create an entry; an entry not fetched within `ttlMs` of its first
 * refusal is dropped, and at most `maxEntries` are kept (oldest dropped first), so tokens that
 * are never fetched cannot grow memory.
 *
 * A render's requests still being judged (a name still resolving) are counted too, so a read of
 * the tally can wait for their verdicts (settled()): the renderer reads once the render's lane is
 * cut, and a refusal recorded after the read would be lost to it.
 */
import type { RejectReason } from '../lib/errors.ts';
import { REFUSALS_KEPT, type RenderTally } from '../lib/guard-contract.ts';

interface Entry {
  blocked: number;
  firstReason: RejectReason | null;
  /** Tunnels refused because the guard was full (lib/guard-contract.ts `busy`). */
  busy: number;
  /** Refused requests by name (`refusedRequestName`), least recent first, at most REFUSALS_KEPT. */
  refused: Map<string, RejectReason>;
  expiresAt: number;
}

export class RenderTallies {
  private readonly entries = new Map<string, Entry>();
  /** Requests being judged, by render token; removed at zero. */
  private readonly judging = new Map<string, number>();
  /** Who waits for a render's judgements to be done, by token. */
  private readonly waiting = new Map<string, Array<() => void>>();
  private unnamed = 0;
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly now: () => number;

  constructor(options: { ttlMs?: number; maxEntries?: number; now?: () => number } = {}) {
    this.ttlMs = options.ttlMs ?? 15 * 60_000;
    this.maxEntries = options.maxEntries ?? 10_000;
    this.now = options.now ?? Date.now;
  }

  /**
   * Counts one refusal for the render `token` names, or apart when it names none. `request` is
   * the refused request's name (lib/guard-contract.ts refusedRequestName), when it has one.
   */
  refuse(token: string | undefined, reason: RejectReason, request?: string): void {
    if (token === undefined) {
      this.unnamed += 1;
      return;
    }
    const entry = this.entryOf(token);
    entry.blocked += 1;
    entry.firstReason ??= reason;
    if (request !== undefined) {
      entry.refused.delete(request); // named again: now the most recent
      entry.refused.set(request, reason);
      if (entry.refused.size > REFUSALS_KEPT) entry.refused.delete(entry.refused.keys().next().value as string);
    }
  }

  /** Counts one tunnel of the render `token` names refused because the guard was full. */
  full(token: string | undefined): void {
    if (token !== undefined) this.entryOf(token).busy += 1;
  }

  /** The render's live entry, made when it has none (the oldest dropped past the bound). */
  private entryOf(token: string): Entry {
    const now = this.now();
    let entry = this.live(token, now);
    if (entry === undefined) {
      this.sweep(now);
      while (this.entries.size >= this.maxEntries) {
        const oldest = this.entries.keys().next().value as string;
        this.entries.delete(oldest);
      }
      entry = { blocked: 0, firstReason: null, busy: 0, refused: new Map(), expiresAt: now + this.ttlMs };
      this.entries.set(token, entry);
    }
    return entry;
  }

  /** Answers one render's tally and forgets it. A token never refused answers zero. */
  take(token: string): RenderTally {
    const entry = this.live(token, this.now());
    this.entries.delete(token);
    if (entry === undefined) return { blocked: 0, firstReason: null, refused: [] };
    const refused = [...entry.refused].map(([request, reason]) => ({ request, reason }));
    return { blocked: entry.blocked, firstReason: entry.firstReason, refused, ...(entry.busy > 0 ? { busy: entry.busy } : {}) };
  }

  /**
   * Marks one request of the render `token` names as being judged; the function returned marks
   * its verdict recorded (call it once, after refuse() when refused). Nothing for no token.
   */
  judge(token: string | undefined): () => void {
    if (token === undefined) return () => {};
    this.judging.set(token, (this.judging.get(token) ?? 0) + 1);
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const left = (this.judging.get(token) ?? 1) - 1;
      if (left > 0) return void this.judging.set(token, left);
      this.judging.delete(token);
      const waiters = this.waiting.get(token) ?? [];
      this.waiting.delete(token);
      for (const w of waiters) w();
    };
  }

  /** Resolves once no request of the render `token` names is being judged, or after `maxWaitMs`. */
  settled(token: string, maxWaitMs: number): Promise<void> {
    if (!this.judging.has(token)) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, maxWaitMs);
      const list = this.waiting.get(token) ?? [];
      list.push(() => {
        clearTimeout(timer);
        resolve();
      });
      this.waiting.set(token, list);
    });
  }

  /** Refusals of requests that named no render. */
  unnamedBlocked(): number {
    return this.unnamed;
  }

  /** How many renders' tallies are held (for tests and a gauge). */
  size(): number {
    return this.entries.size;
  }

  private live(token: string, now: number): Entry | undefined {
    const entry = this.entries.get(token);
    if (entry === undefined) return undefined;
    if (entry.expiresAt <= now) {
      this.entries.delete(token);
      return undefined;
    }
    return entry;
  }

  /** Drops expired entries from the oldest end; insertion order is expiry order. */
  private sweep(now: number): void {
    for (const [token, entry] of this.entries) {
      if (entry.expiresAt > now) break;
      this.entries.delete(token);
    }
  }
}
