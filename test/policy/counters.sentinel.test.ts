/**
 * The counters store through Redis Sentinel (docs/operations.md "Stores"): a store opened with a
 * `redis+sentinel://` URL decides on the master the sentinel names, and after a failover
 * (SENTINEL FAILOVER: the replica promoted, the old master made its replica) it decides on the new
 * master, its counters and the ledger stream carried over by replication.
 */
import t from 'tap';
import { createPolicy, type Decision } from '../../policy/authorize.ts';
import { createKey } from '../../policy/keys.ts';
import { BUILT_IN_PLANS, type Plans } from '../../policy/plans.ts';
import { openRedisStore } from '../../policy/store/redis/store.ts';
import { startRedisSentinel } from './redis-topology.ts';
import { fakeClock, storeHome } from './stores.ts';

const PLANS: Plans = { ...BUILT_IN_PLANS, wide: { monthlyQuota: 1_000, perMinute: 1_000, concurrentRenders: 10 } };

t.test('a failover under a running store: it keeps deciding on the promoted replica, nothing lost', async (t) => {
  const home = await storeHome('postgres');
  const sentinel = await startRedisSentinel();
  const store = openRedisStore({ countersUrl: sentinel.url, databaseUrl: home.env.DATABASE_URL!, poolSize: 4 });
  t.teardown(async () => {
    await store.close();
    await sentinel.destroy();
    await home.drop();
  });
  await store.migrate();
  const clock = fakeClock('2026-06-10T10:00:00Z');
  const policy = createPolicy({ store, plans: PLANS, clock: clock.now, leaseTtlMs: 30_000 });
  const k = await createKey(store, PLANS, { plan: 'wide', now: clock.now() });

  /** A granted call, asking again while the store answers busy (the failover's seconds). */
  const granted = async (): Promise<Extract<Decision, { allow: true }>> => {
    for (let i = 0; i < 300; i++) {
      const d = await policy.check(`Bearer ${k.secret}`, 'ping').catch(() => undefined);
      if (d?.allow) return d;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error('no call granted in 300 tries');
  };
  const settled = async (lease: string): Promise<string> => {
    for (let i = 0; i < 300; i++) {
      const r = await policy.settle({ lease, status: 200, cache: 'miss' }).catch(() => undefined);
      if (r === 'settled' || r === 'already') return r;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error('no settle answered in 300 tries');
  };

  const leases: string[] = [];
  for (let i = 0; i < 5; i++) {
    const d = await granted();
    t.equal(await settled(d.leaseId), 'settled');
    leases.push(d.leaseId);
  }
  const open = await granted();
  const before = await sentinel.masterPort();
  const after = await sentinel.failover();
  t.not(after, before, 'the sentinel names the promoted replica');

  t.equal(await settled(open.leaseId), 'settled', 'a lease granted on the old master settles on the new one');
  for (let i = 0; i < 5; i++) {
    const d = await granted();
    t.equal(await settled(d.leaseId), 'settled');
    leases.push(d.leaseId);
  }
  leases.push(open.leaseId);
  t.equal(await settled(leases[0]!), 'already', 'a lease closed before the failover is remembered after it');
  t.equal(await store.inFlight(k.id), 0);
  t.equal(await store.monthUsed(k.id, '2026-06'), 11, 'every metered call counted once, before and after');
  const usage = await store.usage(k.id);
  t.same(usage.map((r) => r.leaseId).sort(), [...leases].sort(), 'the ledger has each call once, the stream carried over');
});
