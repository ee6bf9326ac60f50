/**
 * The ledger sink (docs/operations.md "Ledger stream"): in each policy replica, reads the closed
 * leases' events from the Redis stream as consumers of one group (two by default, so one reads
 * while the other writes), writes them to PostgreSQL in batches (write.ts: idempotent by lease,
 * tallies counted for new records only), and acknowledges them only after the batch committed. So:
 * - a replica killed mid-batch loses nothing: its unacknowledged entries stay pending and another
 *   replica takes them over once idle for `claimIdleMs` (XAUTOCLAIM), writing again only what
 *   was not written;
 * - PostgreSQL down: entries stay in the stream (and pending), the sink retries every `retryMs`
 *   and catches up in batches when it is back;
 * - the stream is trimmed only below what every group acknowledged (stream.ts trimAcknowledged).
 * The consumers of a replica take turns reading: one reads while the others write. A read that
 * finds fewer than `gatherRows` entries keeps the turn and gathers more until it has them or its
 * oldest entry is `gatherMs` old, so a low rate is written in few statements of many rows (each
 * entry waits at most that long), a high one without waiting, and a backlog (old entries, full
 * batches) is never waited on.
 * An event that is not a UsageRecord is logged by its stream id and acknowledged: it can never be
 * written, and holding it would stop the group.
 */
import os from 'node:os';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Logger } from '../../lib/log.ts';
import { connectRedis, type RedisClient } from '../../lib/redis-connect.ts';
import type { UsageRecord } from '../store/store.ts';
import { LEDGER_FIELD, LEDGER_STREAM, parseLedgerEvent } from './event.ts';
import { ack, appendedAt, compareIds, ensureGroup, fieldOf, groupInfo, readGroup, reclaim, trimAcknowledged, type GroupReader, type StreamEntry } from './stream.ts';
import { writeLedgerBatch } from './write.ts';

export const LEDGER_GROUP = 'tintype-ledger-sink';

/** What one committed batch did; `lagsMs`: per entry, from its XADD to the commit. */
export interface LedgerCommit {
  read: number;
  inserted: number;
  rejected: number;
  lagsMs: number[];
}

export interface LedgerSinkOptions {
  redisUrl: string;
  databaseUrl: string;
  logger: Logger;
  stream?: string;
  group?: string;
  /** This replica's name in the group, unique per process by default; its consumers are `<name>-0`, `<name>-1`, … */
  consumer?: string;
  /** Consumers in this replica, each with a batch in hand (default 2). */
  consumers?: number;
  /** Entries per batch (one statement, one transaction). */
  batchSize?: number;
  /** How long a read waits for new entries. */
  blockMs?: number;
  /** How long after its append an entry may wait for others to share its batch (its statement). */
  gatherMs?: number;
  /** A batch of this many entries is written without waiting for more. */
  gatherRows?: number;
  /** Another consumer's entries pending this long are taken over. */
  claimIdleMs?: number;
  /** Wait between attempts while Redis or PostgreSQL fails. */
  retryMs?: number;
  /** How often the stream is trimmed. */
  trimEveryMs?: number;
  onCommit?: (c: LedgerCommit) => void;
}

export interface LedgerSink {
  /** Stops reading; the batch in hand is finished (or left pending) first. */
  stop(): Promise<void>;
  /** Resolves once every entry of the stream appended before the call is written and acknowledged by this sink's group. */
  drained(): Promise<void>;
}

const DEFAULTS = { consumers: 2, batchSize: 5_000, blockMs: 1_000, gatherMs: 750, gatherRows: 1_000, claimIdleMs: 30_000, retryMs: 1_000, trimEveryMs: 10_000 };
/** While gathering, the stream is read again this often (a few reads per batch, not one per entry). */
const GATHER_STEP_MS = 50;
/** A failing write is logged at its first failure, then at most this often. */
const WARN_EVERY_MS = 60_000;
/** Consumers idle this long with nothing pending (killed replicas, their entries reclaimed) leave the group. */
const FORGET_CONSUMER_MS = 60 * 60 * 1000;

export function startLedgerSink(options: LedgerSinkOptions): LedgerSink {
  const o = { ...DEFAULTS, ...options };
  const stream = o.stream ?? LEDGER_STREAM;
  const group = o.group ?? LEDGER_GROUP;
  const base = o.consumer ?? `${os.hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  // Commands fail fast so the loops decide when to retry. `control` never blocks: drained() and trimming.
  const connect = () => connectRedis(o.redisUrl, { maxRetriesPerRequest: 1 }).on('error', () => {});
  const control = connect();
  const pool = new pg.Pool({ connectionString: o.databaseUrl, max: o.consumers, connectionTimeoutMillis: 5_000, statement_timeout: 60_000, idleTimeoutMillis: 30_000 });
  pool.on('error', () => {});

  let stopping = false;
  let failingSince: number | undefined;
  let lastWarn = 0;
  let lastTrim = Date.now();
  const waiters: Array<{ upTo: string; resolve: () => void }> = [];
  /** Settles when the consumer reading now is done: the next one's turn. */
  let readTurn: Promise<void> = Promise.resolve();

  const settleWaiters = async (): Promise<void> => {
    if (waiters.length === 0) return;
    // Drained up to an id: the group was given it and nothing is pending at or below it.
    const mine = (await groupInfo(control, stream)).find((x) => x['name'] === group);
    if (mine === undefined) return;
    const pending = (await control.xpending(stream, group)) as [number, string | null, ...unknown[]];
    const delivered = String(mine['last-delivered-id']);
    for (let i = waiters.length - 1; i >= 0; i--) {
      const w = waiters[i]!;
      const given = compareIds(delivered, w.upTo) >= 0;
      const clear = pending[1] === null || compareIds(pending[1], w.upTo) > 0;
      if (given && clear) {
        waiters.splice(i, 1);
        w.resolve();
      }
    }
  };

  /** Runs `read` once the consumers before it have read (a failure passes the turn on too). */
  const inTurn = async <T>(read: () => Promise<T>): Promise<T> => {
    const before = readTurn;
    let done!: () => void;
    readTurn = new Promise<void>((resolve) => (done = resolve));
    await before;
    try {
      return await read();
    } finally {
      done();
    }
  };

  /** A batch: `gatherRows` entries or more at once, else what arrives until its oldest entry is `gatherMs` old. Pending entries are not waited on. */
  const gather = async (redis: RedisClient, g: GroupReader, fromPending: boolean): Promise<StreamEntry[]> => {
    const batch = await readGroup(redis, g, o.batchSize, o.blockMs, fromPending);
    if (fromPending || batch.length === 0) return batch;
    // Bounded by this clock too, should Redis's (the entry ids') run ahead of it.
    const until = Date.now() + Math.min(o.gatherMs, appendedAt(batch[0]!.id) + o.gatherMs - Date.now());
    while (batch.length < Math.min(o.gatherRows, o.batchSize) && !stopping) {
      const left = until - Date.now();
      if (left <= 0) break;
      await new Promise((resolve) => setTimeout(resolve, Math.min(left, GATHER_STEP_MS)));
      batch.push(...(await readGroup(redis, g, o.batchSize - batch.length, 0, false)));
    }
    return batch;
  };

  /** One consumer of the group: a connection of its own for its blocking reads, its own pending entries. */
  const consume = async (name: string): Promise<void> => {
    const redis = connect();
    const g: GroupReader = { stream, group, consumer: name };
    let lastClaim = 0;
    let fromPending = true;
    let grouped = false;

    const write = async (batch: StreamEntry[]): Promise<void> => {
      if (batch.length === 0) return;
      const records: UsageRecord[] = [];
      let rejected = 0;
      for (const e of batch) {
        const r = parseLedgerEvent(fieldOf(e, LEDGER_FIELD) ?? '');
        if (r === undefined) {
          rejected++;
          o.logger.warn('ledger.event_rejected', { stream_id: e.id, why: 'not a usage record' });
        } else records.push(r);
      }
      const inserted = await writeLedgerBatch(pool, records);
      const committed = Date.now();
      await ack(redis, g, batch.map((e) => e.id));
      o.onCommit?.({ read: batch.length, inserted, rejected, lagsMs: batch.map((e) => committed - appendedAt(e.id)) });
    };

    const round = async (): Promise<boolean> => {
      if (!grouped) await ensureGroup(redis, g);
      grouped = true;
      const now = Date.now();
      if (now - lastClaim >= o.claimIdleMs / 2) {
        lastClaim = now;
        for (let got = await reclaim(redis, g, o.claimIdleMs, o.batchSize); got.length > 0; got = await reclaim(redis, g, o.claimIdleMs, o.batchSize)) {
          await write(got);
        }
      }
      const batch = await inTurn(() => gather(redis, g, fromPending));
      if (fromPending && batch.length === 0) fromPending = false;
      await write(batch);
      if (now - lastTrim >= o.trimEveryMs) {
        lastTrim = now;
        await trimAcknowledged(control, stream, FORGET_CONSUMER_MS);
      }
      return batch.length > 0;
    };

    while (!stopping) {
      try {
        const busy = await round();
        if (failingSince !== undefined) {
          o.logger.info('ledger.sink_resumed', { failed_ms: Date.now() - failingSince });
          failingSince = undefined;
        }
        if (!busy) await settleWaiters();
      } catch (err) {
        const now = Date.now();
        if (failingSince === undefined) failingSince = now;
        if (now - lastWarn >= WARN_EVERY_MS) {
          lastWarn = now;
          o.logger.warn('ledger.sink_retry', { error: (err as Error).message, failing_ms: now - failingSince });
        }
        // What was read and not acknowledged is this consumer's pending: read it again first
        // (and the group made again, should it be gone).
        fromPending = true;
        grouped = false;
        if (!stopping) await new Promise((resolve) => setTimeout(resolve, o.retryMs));
      }
    }
    redis.disconnect();
  };

  // Each consumer reads its next batch from Redis (in turn) while another's is written to PostgreSQL.
  const loops = Promise.all(Array.from({ length: o.consumers }, (_, i) => consume(`${base}-${i}`)));

  return {
    async stop() {
      stopping = true;
      await loops;
      control.disconnect();
      await pool.end().catch(() => {});
    },
    async drained() {
      const last = (await control.xrevrange(stream, '+', '-', 'COUNT', 1))[0]?.[0];
      if (last === undefined) return;
      await new Promise<void>((resolve) => waiters.push({ upTo: last, resolve }));
    },
  };
}
