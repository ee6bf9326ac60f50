/**
 * The shared render cache in Redis, chosen when REDIS_URL is set (docs/operations.md "Settings"). Entries
 * expire in Redis itself (SET … PX, spec Part 8: 24 hours). A Redis that is down or slow makes
 * a miss and a skipped store, never a failed render.
 */
import { Redis } from 'ioredis';
import type { Logger } from '../../lib/log.ts';
import type { Gauge } from '../../lib/metrics.ts';
import { CACHE_TTL_MS, type CachedFile, type RenderCache } from './cache.ts';

export interface RedisCacheOptions {
  url: string;
  logger: Logger;
  /** Prepended to every key; tests give each run its own. */
  keyPrefix?: string;
  ttlMs?: number;
  /** A command slower than this counts as a miss or a skipped store. */
  commandTimeoutMs?: number;
  /** Set to 1 when the server answers a client that gives no credentials (`tintype_cache_redis_unauthenticated`). */
  unauthenticated?: Gauge;
}

/** Value layout: 2-byte big-endian content-type length, the content type, then the body. */
function encode(file: CachedFile): Buffer {
  const type = Buffer.from(file.contentType, 'utf8');
  const len = Buffer.alloc(2);
  len.writeUInt16BE(type.length, 0);
  return Buffer.concat([len, type, file.body]);
}

function decode(buf: Buffer): CachedFile | undefined {
  if (buf.length < 2) return undefined;
  const len = buf.readUInt16BE(0);
  if (buf.length < 2 + len) return undefined;
  return { contentType: buf.toString('utf8', 2, 2 + len), body: buf.subarray(2 + len) };
}

export class RedisCache implements RenderCache {
  private readonly client: Redis;
  private readonly logger: Logger;
  private readonly ttlMs: number;
  private readonly unauthenticated: Gauge | undefined;

  constructor(options: RedisCacheOptions) {
    this.logger = options.logger;
    this.ttlMs = options.ttlMs ?? CACHE_TTL_MS;
    this.unauthenticated = options.unauthenticated;
    this.client = new Redis(options.url, {
      lazyConnect: true,
      keyPrefix: options.keyPrefix ?? 'tintype:render:',
      maxRetriesPerRequest: 1,
      commandTimeout: options.commandTimeoutMs ?? 2_000,
    });
    // ioredis reports connection trouble as events; without a listener they would be thrown.
    this.client.on('error', (err: Error) => this.logger.warn('cache.redis_error', { error: err.message }));
  }

  async start(): Promise<void> {
    await this.client.connect();
    await this.warnIfOpen();
  }

  /**
   * Asks the same server for a PING as a client with no credentials: an answer means anything
   * that reaches Redis's port (in a cluster, the browser container shares the renderer pod's
   * network) may read and write every key, whatever user REDIS_URL names (docs/security.md, "In a
   * cluster": `ACL SETUSER default off`). Said at start, never a reason not to start.
   */
  private async warnIfOpen(): Promise<void> {
    const { host, port, path, tls, family, connectTimeout } = this.client.options;
    const stranger = new Redis({
      host, port, path, tls, family, connectTimeout,
      lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => null, commandTimeout: 2_000,
    });
    stranger.on('error', () => {});
    const open = await stranger.connect().then(() => stranger.ping()).then((r) => r === 'PONG', () => false);
    stranger.disconnect();
    this.unauthenticated?.set(open ? 1 : 0);
    if (open) this.logger.warn('cache.redis_unauthenticated', { detail: 'Redis answers a client with no password: turn its default user off (ACL SETUSER default off)' });
  }

  async stop(): Promise<void> {
    await this.client.quit().catch(() => this.client.disconnect());
  }

  healthy(): boolean {
    return this.client.status === 'ready';
  }

  async get(key: string): Promise<CachedFile | undefined> {
    try {
      const buf = await this.client.getBuffer(key);
      return buf === null ? undefined : decode(buf);
    } catch (err) {
      this.logger.warn('cache.lookup_failed', { backend: 'redis', error: err instanceof Error ? err.message : 'unknown' });
      return undefined;
    }
  }

  async set(key: string, file: CachedFile): Promise<void> {
    try {
      await this.client.set(key, encode(file), 'PX', this.ttlMs);
    } catch (err) {
      this.logger.warn('cache.store_failed', { backend: 'redis', error: err instanceof Error ? err.message : 'unknown' });
    }
  }

  /** Milliseconds left on an entry (Redis PTTL), for tests and diagnostics. */
  async ttlLeft(key: string): Promise<number> {
    return this.client.pttl(key);
  }

  /** Deletes every key under this cache's prefix; tests clean up with it. */
  async clearPrefix(): Promise<void> {
    const prefix = this.client.options.keyPrefix ?? '';
    let cursor = '0';
    do {
      // SCAN does not apply keyPrefix to MATCH, so the prefix is spelled out; DEL applies it.
      const [next, keys] = await this.client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 100);
      cursor = next;
      if (keys.length > 0) await this.client.del(...keys.map((k) => k.slice(prefix.length)));
    } while (cursor !== '0');
  }
}
