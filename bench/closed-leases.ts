/**
 * `npm run bench -- closed-leases [calls]`: the Redis memory a closed lease takes in the counters
 * store (docs/operations.md "Stores", closed leases), kept REDIS_CLOSED_LEASE_MEMORY_MS, and its
 * lease index: `used_memory` before and after `calls` checks and settles, on one busy key and
 * spread over 1,000 keys, the ledger stream emptied before each reading. Memory, not time: the
 * figures do not depend on the machine's load. The last line gives bytes per closed lease and
 * the bound at 10,000 calls/s with the default render budget.
 */
import { Redis } from 'ioredis';
import { createPolicy } from '../policy/authorize.ts';
import { createKey } from '../policy/keys.ts';
import { BUILT_IN_PLANS, type Plans } from '../policy/plans.ts';
import { openRedisStore, REDIS_CLOSED_LEASE_MEMORY_MS } from '../policy/store/redis/store.ts';
import { LEDGER_STREAM } from '../policy/ledger/event.ts';
import { DEFAULT_RENDER_TIMEOUT_MS } from '../lib/config.ts';
import { startRedis } from '../test/e2e/reliability/instances.ts';
import { benchDatabase } from './database.ts';
import { printMachine } from './machine.ts';

const CALLS = Number(process.argv[3] ?? 20_000);
const RATE = 10_000;
const GRACE_MS = 15_000;
const PLANS: Plans = { ...BUILT_IN_PLANS, wide: { monthlyQuota: 1e9, perMinute: 1e9, concurrentRenders: 1_000 } };

printMachine();
const db = await benchDatabase('bench_closed', { migrate: true });
const redisServer = await startRedis();
const store = openRedisStore({ countersUrl: redisServer.url, databaseUrl: db.url, poolSize: 4, shortLived: true });
const redis = new Redis(redisServer.url);
const now = Date.now();
const policy = createPolicy({ store, plans: PLANS, clock: () => now, leaseTtlMs: DEFAULT_RENDER_TIMEOUT_MS + GRACE_MS });

const used = async (): Promise<number> => {
  await redis.del(LEDGER_STREAM);
  return Number(/used_memory:(\d+)/.exec(await redis.info('memory'))![1]);
};
const dropIndexes = async (): Promise<void> => {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', 'tintype:lease:*', 'COUNT', 1_000);
    cursor = next;
    if (keys.length > 0) await redis.del(...keys);
  } while (cursor !== '0');
};

/** Bytes per closed lease: its record and place in the forgetting order, and its lease index. */
async function measure(keyCount: number): Promise<{ record: number; index: number }> {
  const keys: Array<{ secret: string }> = [];
  for (let i = 0; i < keyCount; i++) keys.push(await createKey(store, PLANS, { plan: 'wide', now }));
  const call = async (i: number): Promise<void> => {
    const d = await policy.check(`Bearer ${keys[i % keys.length]!.secret}`, 'ping');
    if (!d.allow) throw new Error('refused');
    await policy.settle({ lease: d.leaseId, status: 200, cache: 'miss' });
  };
  for (let i = 0; i < keyCount; i++) await call(i); // each key's hashes made before the reading
  await dropIndexes();
  const before = await used();
  for (let i = 0; i < CALLS; i += 50) await Promise.all(Array.from({ length: 50 }, (_, j) => call(i + j)));
  const after = await used();
  await dropIndexes();
  const records = await used();
  await redis.flushall();
  return { record: Math.round((records - before) / CALLS), index: Math.round((after - records) / CALLS) };
}

const busy = await measure(1);
const spread = await measure(1_000);
const kept = RATE * (REDIS_CLOSED_LEASE_MEMORY_MS / 1000);
const indexed = RATE * ((DEFAULT_RENDER_TIMEOUT_MS + GRACE_MS + REDIS_CLOSED_LEASE_MEMORY_MS) / 1000);
const mb = (n: number): number => Math.round(n / 1e6);
console.log(`one key: ${busy.record} B a record, ${busy.index} B an index; 1,000 keys: ${spread.record} B, ${spread.index} B`);
await store.close();
redis.disconnect();
await redisServer.destroy();
await db.drop();
console.log(JSON.stringify({
  bench: 'closed-leases', calls: CALLS, memoryMs: REDIS_CLOSED_LEASE_MEMORY_MS,
  recordBytesOneKey: busy.record, recordBytes1000Keys: spread.record, indexBytes: busy.index,
  at10kPerSecondMB: mb(kept * busy.record + indexed * busy.index),
}));
