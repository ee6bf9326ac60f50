/**
 * The shared render cache in Redis, chosen when REDIS_URL is set (docs/operations.md "Settings"). Entries
 * expire in Redis itself (SET … PX, spec Part 8: 24 hours). A Redis that is down or slow makes
 * a miss and a skipped store, never a failed render.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import type { Logger } from '../../lib/log.ts';
import type { Gauge } from '../../lib/metrics.ts';
import { CACHE_TTL_MS, type CachedFile, type RenderCache } from './cache.ts';
import { FOLLOWED, localFlights, type Flight, type FlightOptions, type Flights } from './flight.ts';

/** Where a render of a key under way is marked (beside its entry, under the cache's prefix). */
const FLIGHT_PREFIX = 'flight:';
/** How often a renderer waiting for another's render of a key asks whether it ended. */
const FLIGHT_POLL_MS = 50;
/** Deletes a flight's mark only while it is still the one this render set. */
const RELEASE_FLIGHT = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0";

type FlightClient = Redis & { releaseFlight(mark: string, token: string): Promise<number> };

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
  private readonly client: FlightClient;
  private readonly flights: Flights;
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
    }) as FlightClient;
    this.client.defineCommand('releaseFlight', { numberOfKeys: 1, lua: RELEASE_FLIGHT });
    this.flights = localFlights((key, o) => this.acrossRenderers(key, o));
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

  flight(key: string, options: FlightOptions): Promise<Flight> {
    return this.flights(key, options);
  }

  /**
   * One render of `key` across every renderer on this Redis: the first to set the key's mark
   * renders; the others ask every FLIGHT_POLL_MS whether the entry is there or the mark gone. The
   * mark lasts the leader's render budget, so a renderer that died mid-render holds no one longer.
   */
  private async acrossRenderers(key: string, options: FlightOptions): Promise<Flight> {
    const mark = FLIGHT_PREFIX + key;
    const token = randomBytes(12).toString('hex');
    if ((await this.client.set(mark, token, 'PX', Math.max(1, options.until - Date.now()), 'NX')) === 'OK') {
      return { lead: true, end: () => this.client.releaseFlight(mark, token).then(() => undefined, () => undefined) };
    }
    while (!options.signal.aborted && Date.now() + FLIGHT_POLL_MS < options.until) {
      await new Promise((r) => setTimeout(r, FLIGHT_POLL_MS));
      const [marked, stored] = (await this.client.pipeline().exists(mark).exists(key).exec()) ?? [];
      if (marked?.[0] != null || stored?.[0] != null) throw marked?.[0] ?? stored?.[0];
      if (stored?.[1] === 1 || marked?.[1] === 0) break;
    }
    return FOLLOWED;
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
