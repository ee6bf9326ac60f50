/**
 * The render cache as every operation sees it (spec Part 1 rule 4, Part 8 rule 3).
 * Backends: a file cache under TINTYPE_DATA_DIR, Redis when REDIS_URL is set.
 * Keys are hashes built by each operation from its whole normalised request, never the API key.
 */
import type { Lifecycle } from '../../lib/lifecycle.ts';
import type { Flight, FlightOptions } from './flight.ts';

/** A cached answer body and its content type. */
export interface CachedFile {
  body: Buffer;
  contentType: string;
}

/** Cache lifetime (spec Part 8: 24 hours). */
export const CACHE_TTL_MS = 24 * 60 * 60 * 1000;

export interface RenderCache extends Lifecycle {
  /** The entry stored under `key` within its lifetime, or undefined. Never throws for a miss. */
  get(key: string): Promise<CachedFile | undefined>;
  /** Stores `file` under `key` for CACHE_TTL_MS. A failure to store never fails the render. */
  set(key: string, file: CachedFile): Promise<void>;
  /** After a miss: whether to render `key` now, or ask again once another render of it ended (flight.ts). Never throws. */
  flight(key: string, options: FlightOptions): Promise<Flight>;
}
