/**
 * Whether the ledger sink's group (sink.ts) has written every event appended to the stream
 * before the call: given to a consumer and none pending at or below the stream's last id then.
 * Read-only, for a report that reads the ledger as of its start (policy/usage-counters.ts) and
 * for a store with no sink of its own (a short-lived command).
 */
import type { RedisClient as Redis } from '../../lib/redis-connect.ts';
import { LEDGER_STREAM } from './event.ts';
import { LEDGER_GROUP } from './sink.ts';
import { compareIds, groupInfo } from './stream.ts';

/** Waits at most `timeoutMs`; answers whether the events appended before the call are written. */
export async function ledgerWritten(redis: Redis, timeoutMs: number): Promise<boolean> {
  const last = (await redis.xrevrange(LEDGER_STREAM, '+', '-', 'COUNT', 1))[0]?.[0];
  if (last === undefined) return true;
  const until = Date.now() + timeoutMs;
  for (;;) {
    const group = (await groupInfo(redis, LEDGER_STREAM).catch(() => [])).find((g) => g['name'] === LEDGER_GROUP);
    if (group !== undefined && compareIds(String(group['last-delivered-id']), last) >= 0) {
      const pending = (await redis.xpending(LEDGER_STREAM, LEDGER_GROUP)) as [number, string | null, ...unknown[]];
      if (pending[1] === null || compareIds(pending[1], last) > 0) return true;
    }
    if (Date.now() >= until) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
}
