/**
 * Cache key of an OG card (spec Part 8 rule 3, "og: identical parameters"): a hash of the
 * cleaned, defaulted parameters, independent of their order in the query, with a version prefix.
 */
import { createHash } from 'node:crypto';
import { PARAMETERS, type OgCard } from './fields.ts';

// Bump when the drawing changes, so cards cached under the old look are not served again.
export const OG_DRAWING_VERSION = 3;

/** `og:v<version>:<sha256 hex>` over the card's parameters in a fixed order. */
export function ogCacheKey(card: OgCard): string {
  const fields = card as Readonly<Record<string, string | undefined>>;
  // Fixed order and explicit absence, so neither query order nor a missing field can collide.
  const canonical = PARAMETERS.map((name) => [name, fields[name] ?? null]);
  const digest = createHash('sha256').update(JSON.stringify(canonical)).digest('hex');
  return `og:v${OG_DRAWING_VERSION}:${digest}`;
}
