/** Open Graph cards (spec 4.5): query validation, cache key, and the drawing pool. */
export { parseOgQuery } from './query.ts';
export { ogCacheKey, OG_DRAWING_VERSION } from './cache-key.ts';
export type { OgCard, Template, Theme, TextField } from './fields.ts';
