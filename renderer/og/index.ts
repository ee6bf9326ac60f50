/**
 * Open Graph cards (spec 4.5): query validation, cache key and the pool of drawing threads.
 * The route (renderer/server/og.ts) uses a drawer as its `OgDrawing`:
 *   const og = createOgDrawer({ threads: config.ogThreads, maxQueue: config.ogQueue });
 *   await og.start();  …  ogRoute(og, cache, config.maxOutputBytes)  …  await og.stop();
 */
import type { OgCard } from './fields.ts';
import { createOgPool, type OgPool, type OgPoolOptions } from './pool.ts';
import { parseOgQuery } from './query.ts';
import { ogCacheKey } from './cache-key.ts';

export { parseOgQuery } from './query.ts';
export { ogCacheKey, OG_DRAWING_VERSION } from './cache-key.ts';
export type { OgCard, Template, Theme, TextField } from './fields.ts';
export type { OgPool, OgPoolOptions, OgPoolStats } from './pool.ts';

/** Everything the OG route needs: parse (400 on a bad query), key, and draw on worker threads. */
export interface OgDrawer extends OgPool {
  /** Validates the query (spec 4.5 rules 1-3, 7); throws ValidationFailure listing every field. */
  parse(query: URLSearchParams): OgCard;
  /** The cache key of identical parameters (spec Part 8 rule 3). */
  key(card: OgCard): string;
}

/** Creates the drawer; call `start()` before the first card and `stop()` at shutdown. */
export function createOgDrawer(options: OgPoolOptions = {}): OgDrawer {
  const pool = createOgPool(options);
  return {
    parse: parseOgQuery,
    key: ogCacheKey,
    draw: (card, signal) => pool.draw(card, signal),
    stats: () => pool.stats(),
    start: () => pool.start(),
    stop: (signal) => pool.stop(signal),
    healthy: () => pool.healthy(),
  };
}
