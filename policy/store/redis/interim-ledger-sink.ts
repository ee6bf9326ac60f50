/**
 * INTERIM: the smallest consumer of the ledger stream that keeps today's PostgreSQL `usage` table
 * (and so `tintype usage` and PolicyStore.usage()) whole while the counters are in Redis. It is
 * one function, interimLedgerSink(), for the batched, partitioned sink of docs/architecture.md §2
 * "The counters store" to replace. Events are `XADD tintype:ledger * e <UsageRecord JSON>`, one
 * per closed lease with a record, possibly more than once (a repeated settle appends again), so
 * the write is idempotent by lease id (`ON CONFLICT (lease_id) DO NOTHING`: the tally trigger
 * counts only rows inserted). Read through one consumer group; an event is acknowledged only
 * after its batch committed, and a replica's unacknowledged events are taken over by another
 * after CLAIM_IDLE_MS (a replica killed mid-batch loses nothing).
 */
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import type pg from 'pg';
import type { UsageRecord } from '../store.ts';

export const LEDGER_STREAM = 'tintype:ledger';
export const INTERIM_SINK_GROUP = 'tintype-interim-sink';
/** Events read and not acknowledged this long are another replica's to write. */
export const CLAIM_IDLE_MS = 30_000;
const BATCH = 1_000;
const EVERY_MS = 250;
const COLUMNS = 11;

export interface LedgerSink {
  /** Writes every event appended so far; `takeOver`: also those another replica read and did not acknowledge yet. */
  drain(takeOver?: boolean): Promise<number>;
  start(onError: (err: unknown) => void): void;
  stop(): Promise<void>;
}

type Entry = [id: string, fields: string[]];

export function interimLedgerSink(redis: Redis, pool: pg.Pool): LedgerSink {
  const consumer = `policy-${process.pid}-${randomBytes(4).toString('hex')}`;
  let grouped = false;
  let running: Promise<number> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;

  const group = async (): Promise<void> => {
    if (grouped) return;
    await redis.xgroup('CREATE', LEDGER_STREAM, INTERIM_SINK_GROUP, '0', 'MKSTREAM').catch((err: Error) => {
      if (!/BUSYGROUP/.test(err.message)) throw err;
    });
    grouped = true;
  };

  const write = async (entries: Entry[]): Promise<number> => {
    if (entries.length === 0) return 0;
    const values: unknown[] = [];
    const rows: string[] = [];
    for (const [, fields] of entries) {
      const i = fields.indexOf('e');
      if (i < 0 || i + 1 >= fields.length) continue;
      const r = JSON.parse(fields[i + 1]!) as UsageRecord;
      const base = values.length;
      values.push(r.leaseId, r.keyId, r.operation, r.month, r.status, r.error, r.cache, r.metered, r.outcome, r.checkedAt, r.recordedAt);
      rows.push(`(${Array.from({ length: COLUMNS }, (_, j) => `$${base + j + 1}`).join(', ')})`);
    }
    if (rows.length > 0) {
      await pool.query(`INSERT INTO usage (lease_id, key_id, operation, month, status, error, cache, metered, outcome, checked_at, recorded_at)
        VALUES ${rows.join(', ')} ON CONFLICT (lease_id) DO NOTHING`, values);
    }
    await redis.xack(LEDGER_STREAM, INTERIM_SINK_GROUP, ...entries.map(([id]) => id));
    return entries.length;
  };

  const once = async (takeOver: boolean): Promise<number> => {
    await group();
    let n = 0;
    // Pending events: this replica's own from a failed batch, and others' left idle.
    for (let cursor = '0-0'; ;) {
      const [next, entries] = (await redis.call('XAUTOCLAIM', LEDGER_STREAM, INTERIM_SINK_GROUP, consumer,
        takeOver ? 0 : CLAIM_IDLE_MS, cursor, 'COUNT', BATCH)) as [string, Entry[]];
      n += await write(entries);
      if (next === '0-0') break;
      cursor = next;
    }
    for (;;) {
      const got = (await redis.xreadgroup('GROUP', INTERIM_SINK_GROUP, consumer, 'COUNT', BATCH, 'STREAMS', LEDGER_STREAM, '>')) as
        Array<[string, Entry[]]> | null;
      const entries = got?.[0]?.[1] ?? [];
      n += await write(entries);
      // A batch not full took everything appended before it; what came since waits for the next
      // pass, so a steady trickle is written a few batches a second, not one insert per event.
      if (entries.length < BATCH) break;
    }
    return n;
  };

  const drain = async (takeOver = false): Promise<number> => {
    // One pass at a time per replica; a read that asked for everything runs its own pass after.
    while (running !== undefined) await running.catch(() => 0);
    running = once(takeOver).finally(() => {
      running = undefined;
    });
    return running;
  };

  return {
    drain,
    start(onError) {
      const loop = (): void => {
        if (stopped) return;
        timer = setTimeout(() => void drain().catch(onError).finally(loop), EVERY_MS);
        timer.unref();
      };
      loop();
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running?.catch(() => 0);
    },
  };
}

/**
 * Waits until the sink has written every event appended before the call (none left undelivered
 * or unacknowledged up to the stream's last id then), for at most `timeoutMs`; answers whether
 * it has. Read-only: a report reads the ledger as of its start without writing anything.
 */
export async function ledgerWritten(redis: Redis, timeoutMs: number): Promise<boolean> {
  const last = (await redis.xrevrange(LEDGER_STREAM, '+', '-', 'COUNT', 1))[0]?.[0];
  if (last === undefined) return true;
  const until = Date.now() + timeoutMs;
  for (;;) {
    const groups = (await redis.xinfo('GROUPS', LEDGER_STREAM).catch(() => [])) as unknown[][];
    const fields = groups.map((g) => Object.fromEntries(Array.from({ length: g.length / 2 }, (_, i) => [String(g[2 * i]), g[2 * i + 1]])))
      .find((g) => g.name === INTERIM_SINK_GROUP);
    const delivered = fields === undefined ? '0-0' : String(fields['last-delivered-id']);
    const pending = fields === undefined ? [] : (await redis.xpending(LEDGER_STREAM, INTERIM_SINK_GROUP, '-', last, 1)) as unknown[];
    if (streamIdAtLeast(delivered, last) && pending.length === 0) return true;
    if (Date.now() >= until) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
}

function streamIdAtLeast(a: string, b: string): boolean {
  const [am, as] = a.split('-').map(BigInt) as [bigint, bigint];
  const [bm, bs] = b.split('-').map(BigInt) as [bigint, bigint];
  return am > bm || (am === bm && as >= bs);
}
