/**
 * A Redis URL as a connection (docs/operations.md "Settings", "Stores"): one server, a master
 * found through Redis Sentinel, or a Redis Cluster, each as ioredis connects to it.
 *
 * - `redis://…`, `rediss://…`: one server, as ioredis reads the URL.
 * - `redis+sentinel://[[user]:password@]host:port[,host:port…]/<masterName>[/<db>]` (and
 *   `rediss+sentinel://`, TLS to the sentinels and the master): the master the sentinels name,
 *   found again after a failover.
 * - `redis+cluster://[[user]:password@]host:port[,host:port…]` (and `rediss+cluster://`): the
 *   cluster those nodes belong to; the others are learned from them.
 *
 * The user and password are the data nodes' and, for Sentinel, the sentinels' too. A URL may hold
 * a password: it is never logged, and no error here quotes it.
 */
import { Cluster, Redis, type RedisOptions } from 'ioredis';

export type RedisClient = Redis | Cluster;

export type RedisTarget =
  | { kind: 'server'; url: string }
  | { kind: 'sentinel'; tls: boolean; username?: string; password?: string; nodes: HostPort[]; masterName: string; db: number }
  | { kind: 'cluster'; tls: boolean; username?: string; password?: string; nodes: HostPort[] };

export interface HostPort {
  host: string;
  port: number;
}

/** What a URL may look like, for errors (the value itself is never quoted). */
export const REDIS_URL_FORMS = 'redis://, rediss://, redis+sentinel://host:port[,host:port…]/<masterName>[/<db>], rediss+sentinel://…, redis+cluster://host:port[,host:port…], rediss+cluster://…';

const DEFAULT_PORT = { sentinel: 26379, cluster: 6379 } as const;
const TOPOLOGY = /^(rediss?)\+(sentinel|cluster):\/\/(?:([^@/]*)@)?([^@/]+)(?:\/(.*))?$/;

/** The target a URL names; throws an Error (naming no part of the URL) when it names none. */
export function parseRedisUrl(url: string): RedisTarget {
  const m = TOPOLOGY.exec(url);
  if (m === null) {
    let scheme: string;
    try {
      scheme = new URL(url).protocol;
    } catch {
      throw new Error('not an absolute URL');
    }
    if (scheme !== 'redis:' && scheme !== 'rediss:') throw new Error('an unknown scheme');
    return { kind: 'server', url };
  }
  const [, base, kind, userinfo, hosts, rest] = m as unknown as [string, string, 'sentinel' | 'cluster', string | undefined, string, string | undefined];
  const tls = base === 'rediss';
  const credentials = userinfo === undefined ? {} : parseUserinfo(userinfo);
  const nodes = hosts.split(',').map((h) => parseHostPort(h, DEFAULT_PORT[kind]));
  const path = (rest ?? '').split('/').filter((s) => s !== '');
  if (kind === 'cluster') {
    if (path.length > 0) throw new Error('a cluster URL with a path (a cluster has database 0 only)');
    return { kind, tls, ...credentials, nodes };
  }
  if (path.length === 0 || path.length > 2) throw new Error('a sentinel URL without /<masterName>[/<db>]');
  const masterName = decode(path[0]!);
  const db = path[1] === undefined ? 0 : Number(path[1]);
  if (!/^\d+$/.test(path[1] ?? '0') || !Number.isSafeInteger(db)) throw new Error('a sentinel URL whose database is not a whole number');
  return { kind, tls, ...credentials, nodes, masterName, db };
}

function parseUserinfo(userinfo: string): { username?: string; password?: string } {
  const colon = userinfo.indexOf(':');
  if (colon < 0) throw new Error('credentials without a password ([[user]:password@])');
  const username = decode(userinfo.slice(0, colon));
  const password = decode(userinfo.slice(colon + 1));
  return { ...(username === '' ? {} : { username }), password };
}

function parseHostPort(s: string, defaultPort: number): HostPort {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:[\]]+)(?::(\d{1,5}))?$/.exec(s.trim());
  const port = m?.[2] === undefined ? defaultPort : Number(m[2]);
  if (m === null || port < 1 || port > 65535) throw new Error('a host list that is not host:port[,host:port…]');
  return { host: m[1]!.replace(/^\[(.*)\]$/, '$1'), port };
}

function decode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    throw new Error('a bad percent-escape');
  }
}

/**
 * Options every connection of one caller takes (timeouts, retries, lazyConnect); for a cluster
 * they are each node's. Its `error` events are the caller's to listen to.
 */
export function connectRedis(url: string, options: RedisOptions = {}): RedisClient {
  const target = parseRedisUrl(url);
  if (target.kind === 'server') return new Redis(url, options);
  const auth = { ...(target.username === undefined ? {} : { username: target.username }), ...(target.password === undefined ? {} : { password: target.password }) };
  const tls = target.tls ? { tls: {} } : {};
  if (target.kind === 'sentinel') {
    return new Redis({
      ...options,
      ...auth,
      ...tls,
      sentinels: target.nodes,
      name: target.masterName,
      db: target.db,
      ...(target.username === undefined ? {} : { sentinelUsername: target.username }),
      ...(target.password === undefined ? {} : { sentinelPassword: target.password }),
      ...(target.tls ? { enableTLSForSentinelMode: true, sentinelTLS: {} } : {}),
      // A failover is learned as the sentinels announce it, not only when the old master drops us.
      failoverDetector: true,
      // A demoted master answers writes READONLY until the connection moves: reconnect, through the sentinels.
      reconnectOnError: (err) => err.message.startsWith('READONLY'),
    });
  }
  // What a cluster decides for itself (it queues, connects and batches per node), the rest each node's.
  const { lazyConnect, enableOfflineQueue, enableAutoPipelining, ...nodeOptions } = options;
  return new Cluster(target.nodes, {
    ...(lazyConnect === undefined ? {} : { lazyConnect }),
    ...(enableOfflineQueue === undefined ? {} : { enableOfflineQueue }),
    ...(enableAutoPipelining === undefined ? {} : { enableAutoPipelining }),
    redisOptions: { ...nodeOptions, ...auth, ...tls },
  });
}
