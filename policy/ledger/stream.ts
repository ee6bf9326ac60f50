/**
 * The Redis side of the ledger sink (docs/operations.md "Ledger stream"): reading a consumer
 * group's entries, reclaiming a dead consumer's, acknowledging, and trimming the stream only
 * below what every group has acknowledged.
 */
import type { RedisClient as Redis } from '../../lib/redis-connect.ts';

/** One stream entry: its id (`ms-seq`, the ms of its XADD) and its fields as Redis gave them. */
export interface StreamEntry {
  id: string;
  fields: string[];
}

type RawEntries = Array<[string, string[] | null]>;

/** An entry deleted while pending comes back without fields: kept, so it is refused and acknowledged, not held forever. */
const entries = (raw: RawEntries | null | undefined): StreamEntry[] => (raw ?? []).map(([id, fields]) => ({ id, fields: fields ?? [] }));

/** The value of `field` in an entry; undefined when the entry has none. */
export function fieldOf(e: StreamEntry, field: string): string | undefined {
  for (let i = 0; i + 1 < e.fields.length; i += 2) if (e.fields[i] === field) return e.fields[i + 1];
  return undefined;
}

/** The ms part of an entry id: when Redis appended it. */
export function appendedAt(id: string): number {
  return Number(id.slice(0, id.indexOf('-')));
}

/** Orders two stream ids. */
export function compareIds(a: string, b: string): number {
  const [am, as] = a.split('-').map(BigInt) as [bigint, bigint];
  const [bm, bs] = b.split('-').map(BigInt) as [bigint, bigint];
  return am !== bm ? (am < bm ? -1 : 1) : as === bs ? 0 : as < bs ? -1 : 1;
}

export interface GroupReader {
  stream: string;
  group: string;
  consumer: string;
}

/** Makes the group when missing, from the stream's first entry, so no event appended before is skipped. */
export async function ensureGroup(redis: Redis, g: GroupReader): Promise<void> {
  try {
    await redis.xgroup('CREATE', g.stream, g.group, '0', 'MKSTREAM');
  } catch (err) {
    if (!/BUSYGROUP/.test((err as Error).message)) throw err;
  }
}

/**
 * Up to `count` entries: this consumer's own pending ones first (`fromPending`: read before,
 * never acknowledged: a failed write, or a restart under the same name), else new ones, waiting
 * up to `blockMs` for some (0: not waiting).
 */
export async function readGroup(redis: Redis, g: GroupReader, count: number, blockMs: number, fromPending: boolean): Promise<StreamEntry[]> {
  const raw = fromPending
    ? await redis.xreadgroup('GROUP', g.group, g.consumer, 'COUNT', count, 'STREAMS', g.stream, '0')
    : blockMs > 0
      ? await redis.xreadgroup('GROUP', g.group, g.consumer, 'COUNT', count, 'BLOCK', blockMs, 'STREAMS', g.stream, '>')
      : await redis.xreadgroup('GROUP', g.group, g.consumer, 'COUNT', count, 'STREAMS', g.stream, '>');
  const streams = raw as Array<[string, RawEntries]> | null;
  return entries(streams?.[0]?.[1]);
}

/** Takes over up to `count` entries other consumers left pending longer than `idleMs` (a killed replica's). */
export async function reclaim(redis: Redis, g: GroupReader, idleMs: number, count: number): Promise<StreamEntry[]> {
  const raw = (await redis.xautoclaim(g.stream, g.group, g.consumer, idleMs, '0-0', 'COUNT', count)) as [string, RawEntries];
  return entries(raw[1]);
}

export async function ack(redis: Redis, g: GroupReader, ids: readonly string[]): Promise<void> {
  if (ids.length > 0) await redis.xack(g.stream, g.group, ...ids);
}

/** A flat [name, value, …] reply as an object. */
function pairs(flat: unknown[]): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) o[String(flat[i])] = flat[i + 1];
  return o;
}

/** XINFO GROUPS: one object per group of the stream (name, pending, last-delivered-id, …). */
export async function groupInfo(redis: Redis, stream: string): Promise<Array<Record<string, unknown>>> {
  return ((await redis.xinfo('GROUPS', stream)) as unknown[][]).map(pairs);
}

/**
 * Trims the stream below the oldest entry some group still needs: per group, its oldest pending
 * entry, or, with none pending, the last one it was given (everything before is acknowledged).
 * Consumers gone quiet for `forgetIdleMs` with nothing pending are removed from their group.
 * Returns the entries trimmed.
 */
export async function trimAcknowledged(redis: Redis, stream: string, forgetIdleMs: number): Promise<number> {
  const groups = await groupInfo(redis, stream);
  let floor: string | undefined;
  for (const g of groups) {
    const name = String(g['name']);
    let needed = String(g['last-delivered-id']);
    if (Number(g['pending']) > 0) {
      const summary = (await redis.xpending(stream, name)) as [number, string | null, string | null, unknown];
      if (summary[1] !== null) needed = summary[1];
    }
    if (floor === undefined || compareIds(needed, floor) < 0) floor = needed;
    const consumers = ((await redis.xinfo('CONSUMERS', stream, name)) as unknown[][]).map(pairs);
    for (const c of consumers) {
      if (Number(c['pending']) === 0 && Number(c['idle']) > forgetIdleMs) await redis.xgroup('DELCONSUMER', stream, name, String(c['name']));
    }
  }
  return floor === undefined ? 0 : Number(await redis.xtrim(stream, 'MINID', floor));
}
