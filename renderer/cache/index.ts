/** The render cache the configuration selects: Redis when REDIS_URL is set, else files under TINTYPE_DATA_DIR. */
import path from 'node:path';
import type { Config } from '../../lib/config.ts';
import type { Logger } from '../../lib/log.ts';
import type { Registry } from '../../lib/metrics.ts';
import type { RenderCache } from './cache.ts';
import { FileCache } from './file.ts';
import { RedisCache } from './redis.ts';

export type { CachedFile, RenderCache } from './cache.ts';
export { CACHE_TTL_MS } from './cache.ts';
export { FileCache } from './file.ts';
export { RedisCache } from './redis.ts';
export { htmlToImageKey, pdfKey, screenshotKey, normaliseUrl } from './keys.ts';

export function createRenderCache(config: Readonly<Config>, logger: Logger, registry: Registry): RenderCache {
  if (config.redisUrl !== undefined) {
    const unauthenticated = registry.gauge('tintype_cache_redis_unauthenticated', 'Whether the cache\'s Redis answered a PING from a client with no credentials at start (1: turn its default user off).');
    return new RedisCache({ url: config.redisUrl, logger, unauthenticated });
  }
  return new FileCache({ dir: path.join(config.dataDir, 'cache'), maxBytes: config.cacheMaxBytes, logger });
}
