/**
 * The counters store's memory of closed leases (docs/operations.md "Stores"): a repeated settle
 * within 60 s (REDIS_CLOSED_LEASE_MEMORY_MS, twice the renderer's settle retries) answers `already`, appends the lease's ledger event again
 * and writes no second ledger row; past it the lease is forgotten (its record gone from Redis)
 * and a settle is answered `unknown`.
 */
import t from 'tap';
import { Redis } from 'ioredis';
import { createPolicy } from '../../policy/authorize.ts';
import { createKey } from '../../policy/keys.ts';
import { BUILT_IN_PLANS, type Plans } from '../../policy/plans.ts';
import { keyPrefix } from '../../policy/store/redis/store.ts';
import { LEDGER_STREAM, parseLedgerEvent } from '../../policy/ledger/event.ts';
import type { UsageRecord } from '../../policy/store/store.ts';
import { fakeClock, storeHome } from './stores.ts';

const PLANS: Plans = { ...BUILT_IN_PLANS, wide: { monthlyQuota: 1_000, perMinute: 1_000, concurrentRenders: 10 } };

t.test('a closed lease is remembered for the settle retries, then forgotten', async (t) => {
  const home = await storeHome('redis');
  const store = home.open();
  const redis = new Redis(home.env.TINTYPE_COUNTERS_URL!);
  t.teardown(async () => {
    redis.disconnect();
    await store.close();
    await home.drop();
  });
  await store.migrate();
  const clock = fakeClock('2026-06-10T10:00:00Z');
  const policy = createPolicy({ store, plans: PLANS, clock: clock.now, leaseTtlMs: 30_000 });
  const k = await createKey(store, PLANS, { plan: 'wide', now: clock.now() });
  const granted = async (): Promise<string> => {
    const d = await policy.check(`Bearer ${k.secret}`, 'pdf');
    if (!d.allow) throw new Error('not granted');
    return d.leaseId;
  };
  const eventsOf = async (lease: string): Promise<UsageRecord[]> =>
    (await redis.xrange(LEDGER_STREAM, '-', '+')).map(([, f]) => parseLedgerEvent(f[1]!)!).filter((r) => r.leaseId === lease);

  const lease = await granted();
  t.equal(await policy.settle({ lease, status: 200, cache: 'miss' }), 'settled');
  clock.advance(59_000);
  t.equal(await policy.settle({ lease, status: 200, cache: 'miss' }), 'already', 'a retry within the memory: already');
  t.equal(await policy.settle({ lease, status: 503, error: 'busy' }, k.id), 'already', 'also when it names the key');
  const events = await eventsOf(lease);
  t.equal(events.length, 3, 'each repeat appends the event again (a close whose append was lost is healed so)');
  t.match(events[0], { leaseId: lease, keyId: k.id, operation: 'pdf', month: '2026-06', status: 200, cache: 'miss', metered: true, outcome: 'settled' });
  t.same(events[2], events[0], 'the same record each time, rebuilt from what the close kept');
  const rows = (await store.usage(k.id)).filter((r) => r.leaseId === lease);
  t.equal(rows.length, 1, 'one ledger row: the sink writes a lease once');
  t.equal(await store.monthUsed(k.id, '2026-06'), 1, 'metered once');

  clock.advance(2_000);
  // The next close of the key forgets what is past the memory.
  const later = await granted();
  t.equal(await policy.settle({ lease: later, status: 200, cache: 'miss' }), 'settled');
  t.equal(await redis.hexists(`${keyPrefix(k.id)}c`, lease), 0, 'past the memory its record is gone from Redis');
  t.equal(await redis.zscore(`${keyPrefix(k.id)}ce`, lease), null);
  t.equal(await policy.settle({ lease, status: 200, cache: 'miss' }, k.id), 'unknown', 'and a settle is answered unknown');
  t.equal((await store.usage(k.id)).filter((r) => r.leaseId === lease).length, 1, 'its ledger row stays');
});
