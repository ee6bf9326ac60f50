/**
 * The usage report of the counters store (docs/operations.md "Reading usage"): the ledger's
 * tallies from PostgreSQL as usage-postgres.ts reads them, once the ledger sink has written the
 * events appended before the read began (waiting at most LEDGER_WAIT_MS; a report past it says
 * what is written); the month's calls and the leases in flight from Redis, where the counters
 * are, in one pipeline. Read-only on both.
 */
import { connectRedis } from '../lib/redis-connect.ts';
import { ledgerWritten } from './ledger/written.ts';
import { keyPrefix } from './store/redis/store.ts';
import { postgresUsageReader } from './usage-postgres.ts';
import type { UsageReader } from './usage-reader.ts';

const LEDGER_WAIT_MS = 10_000;

export function countersUsageReader(databaseUrl: string, countersUrl: string): UsageReader {
  const ledger = postgresUsageReader(databaseUrl);
  return {
    async read(month, keyId) {
      const redis = connectRedis(countersUrl, { lazyConnect: true, maxRetriesPerRequest: 1, commandTimeout: 5_000 });
      redis.on('error', () => {});
      try {
        await redis.connect();
        await ledgerWritten(redis, LEDGER_WAIT_MS);
        const snapshot = await ledger.read(month, keyId);
        // One pipeline per key, each on its key's slot (a Cluster's pipeline stays on one node).
        const got = await Promise.all(snapshot.keys.map((k) => redis.pipeline().get(`${keyPrefix(k.id)}m:${month}`).hvals(`${keyPrefix(k.id)}l`).exec()));
        const used: typeof snapshot.used = [];
        const open: typeof snapshot.open = [];
        snapshot.keys.forEach((k, i) => {
          const [[e1, held], [e2, leases]] = got[i] as [[Error | null, string | null], [Error | null, string[]]];
          if (e1 !== null || e2 !== null) throw e1 ?? e2;
          if (held !== null) used.push({ keyId: k.id, used: Number(held) });
          const n = (leases as string[]).filter((l) => (JSON.parse(l) as { m: string }).m === month).length;
          if (n > 0) open.push({ keyId: k.id, n });
        });
        return { ...snapshot, used, open };
      } finally {
        redis.disconnect();
      }
    },
    close: () => ledger.close(),
  };
}
