/**
 * What only the counters store promises (docs/architecture.md §2 "The counters store"): refusals
 * that cannot change are answered with no Redis script call, a revocation reaches another
 * replica's memory within FRESH_MS, the month's count is seeded from PostgreSQL's tallies when
 * Redis holds none, and every closed lease with a record is one event on `tintype:ledger`
 * (appended again by a repeated settle, never for a 400 or 503).
 */
import t, { type Test } from 'tap';
import { Redis } from 'ioredis';
import { createPolicy } from '../../policy/authorize.ts';
import { createKey, revokeKey } from '../../policy/keys.ts';
import { BUILT_IN_PLANS, type Plans } from '../../policy/plans.ts';
import { FRESH_MS } from '../../policy/fresh-reads.ts';
import { keyPrefix, openRedisStore } from '../../policy/store/redis/store.ts';
import { startPostgres, startRedis } from '../e2e/reliability/instances.ts';
import { LEDGER_STREAM } from '../../policy/ledger/event.ts';
import type { UsageRecord } from '../../policy/store/store.ts';
import { fakeClock, storeHome } from './stores.ts';

const PLANS: Plans = {
  ...BUILT_IN_PLANS,
  burst: { monthlyQuota: 1_000, perMinute: 5, concurrentRenders: 5 },
  small: { monthlyQuota: 3, perMinute: 1_000, concurrentRenders: 5 },
  wide: { monthlyQuota: 1_000, perMinute: 1_000, concurrentRenders: 10 },
};

async function setup(t: Test) {
  const home = await storeHome('redis');
  const store = home.open();
  const replica = home.open();
  const redis = new Redis(home.env.TINTYPE_COUNTERS_URL!);
  t.teardown(async () => {
    redis.disconnect();
    await store.close();
    await replica.close();
    await home.drop();
  });
  await store.migrate();
  const clock = fakeClock('2026-05-05T10:00:00Z');
  const policy = createPolicy({ store, plans: PLANS, clock: clock.now, leaseTtlMs: 30_000 });
  const other = createPolicy({ store: replica, plans: PLANS, clock: clock.now, leaseTtlMs: 30_000 });
  /** Script calls Redis has run so far (EVALSHA, and EVAL after a script cache flush). */
  const scriptCalls = async (): Promise<number> => {
    const info = await redis.info('commandstats');
    return [...info.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+)/g)].reduce((n, m) => n + Number(m[1]), 0);
  };
  return { home, store, replica, redis, clock, policy, other, scriptCalls };
}

t.test('a key over its burst window is refused from memory for the rest of the window, with no script call', async (t) => {
  const { store, clock, policy, scriptCalls } = await setup(t);
  const k = await createKey(store, PLANS, { plan: 'burst', now: clock.now() });
  for (let i = 0; i < 5; i++) t.equal((await policy.check(`Bearer ${k.secret}`, 'ping')).allow, true);
  const first = await policy.check(`Bearer ${k.secret}`, 'ping');
  t.equal(first.allow, false);
  const before = await scriptCalls();
  for (let i = 0; i < 20; i++) {
    const d = await policy.check(`Bearer ${k.secret}`, 'ping');
    t.same(d.allow ? undefined : d.error.answer().body.error, 'rate_limited');
  }
  t.equal(await scriptCalls(), before, 'twenty refusals, no script call');
  clock.set('2026-05-05T10:01:00Z');
  t.equal((await policy.check(`Bearer ${k.secret}`, 'ping')).allow, true, 'the next window asks the store again and grants');
  t.equal(await scriptCalls(), before + 2, 'one check and its schedule');
});

t.test('a key over its month with nothing in flight is refused from memory until the month turns', async (t) => {
  const { store, clock, policy, scriptCalls } = await setup(t);
  const k = await createKey(store, PLANS, { plan: 'small', now: clock.now() });
  const granted = [];
  for (let i = 0; i < 3; i++) {
    const d = await policy.check(`Bearer ${k.secret}`, 'pdf');
    if (d.allow) granted.push(d.leaseId);
  }
  t.equal(granted.length, 3);
  clock.advance(60_000);
  const inFlight = await scriptCalls();
  t.match(await policy.check(`Bearer ${k.secret}`, 'pdf'), { allow: false });
  t.match(await policy.check(`Bearer ${k.secret}`, 'pdf'), { allow: false });
  t.equal(await scriptCalls(), inFlight + 4, 'with reservations in flight each refusal asks the store (one may come back)');
  t.equal(await policy.settle({ lease: granted[0]!, status: 503 }), 'settled', 'a 503 gives its reservation back');
  const again = await policy.check(`Bearer ${k.secret}`, 'pdf');
  t.equal(again.allow, true, 'and the call is granted again');
  if (again.allow) granted.push(again.leaseId);
  for (const lease of granted.slice(1)) await policy.settle({ lease, status: 200 });
  const last = await policy.check(`Bearer ${k.secret}`, 'pdf');
  t.match(last, { allow: false });
  const before = await scriptCalls();
  clock.advance(60_000);
  for (let i = 0; i < 5; i++) {
    const d = await policy.check(`Bearer ${k.secret}`, 'pdf');
    t.equal(d.allow ? undefined : d.error.answer().body.error, 'quota_exceeded');
  }
  t.equal(await scriptCalls(), before, 'nothing in flight: five refusals, no script call, across windows');
  clock.set('2026-06-01T00:00:00Z');
  t.equal((await policy.check(`Bearer ${k.secret}`, 'pdf')).allow, true, 'the month turned: asked again, granted');
});

t.test('a revocation made through one replica reaches the other within FRESH_MS', async (t) => {
  const { store, clock, policy, other } = await setup(t);
  const k = await createKey(store, PLANS, { plan: 'pro', now: clock.now() });
  t.equal((await other.check(`Bearer ${k.secret}`, 'ping')).allow, true, 'the other replica holds the key');
  t.equal(await revokeKey(store, k.id, clock.now()), true);
  t.match(await policy.check(`Bearer ${k.secret}`, 'ping'), { allow: false }, 'the replica that revoked refuses at once');
  await new Promise((r) => setTimeout(r, FRESH_MS + 100));
  const d = await other.check(`Bearer ${k.secret}`, 'ping');
  t.equal(d.allow ? undefined : d.error.answer().body.error, 'unauthorized', 'the other refuses once FRESH_MS passed');
});

t.test('a month Redis does not hold is seeded from the ledger in PostgreSQL', async (t) => {
  const { store, redis, clock, policy } = await setup(t);
  const k = await createKey(store, PLANS, { plan: 'small', now: clock.now() });
  for (let i = 0; i < 2; i++) {
    const d = await policy.check(`Bearer ${k.secret}`, 'pdf');
    if (d.allow) await policy.settle({ lease: d.leaseId, status: 200 });
  }
  t.equal((await store.usage(k.id)).length, 2, 'both in the ledger');
  // What a Redis that lost its data (no append-only file) would hold of the key: nothing.
  await redis.del(...(await redis.keys(`${keyPrefix(k.id)}*`)));
  t.equal(await store.monthUsed(k.id, '2026-05'), 2, 'read from the tallies');
  t.equal((await policy.check(`Bearer ${k.secret}`, 'pdf')).allow, true, 'the third call of three');
  const d = await policy.check(`Bearer ${k.secret}`, 'pdf');
  t.equal(d.allow ? undefined : d.error.answer().body.error, 'quota_exceeded', 'the fourth is over the month');
});

t.test('each closed lease with a record is one ledger event; a repeated settle appends it again; a 400 appends none', async (t) => {
  const { store, redis, clock, policy } = await setup(t);
  const k = await createKey(store, PLANS, { plan: 'wide', now: clock.now() });
  const events = async (): Promise<UsageRecord[]> =>
    (await redis.xrange(LEDGER_STREAM, '-', '+')).map(([, f]) => JSON.parse(f[f.indexOf('e') + 1]!) as UsageRecord);
  const a = await policy.check(`Bearer ${k.secret}`, 'pdf');
  const b = await policy.check(`Bearer ${k.secret}`, 'og');
  const c = await policy.check(`Bearer ${k.secret}`, 'pdf');
  if (!a.allow || !b.allow || !c.allow) throw new Error('not granted');
  clock.advance(1_000);
  await policy.settle({ lease: a.leaseId, status: 200, cache: 'miss' }, k.id);
  await policy.settle({ lease: b.leaseId, status: 400 }, k.id);
  const once = await events();
  t.same(once, [{
    leaseId: a.leaseId, keyId: k.id, operation: 'pdf', month: '2026-05', status: 200, error: null, cache: 'miss',
    metered: true, outcome: 'settled', checkedAt: Date.parse('2026-05-05T10:00:00Z'), recordedAt: Date.parse('2026-05-05T10:00:01Z'),
  }], 'exactly a UsageRecord; nothing for the 400');
  t.equal(await policy.settle({ lease: a.leaseId, status: 200, cache: 'miss' }, k.id), 'already');
  t.equal(await policy.settle({ lease: b.leaseId, status: 400 }, k.id), 'already');
  t.same(await events(), [once[0], once[0]], 'the repeat appends the same record again');
  clock.advance(60_000);
  t.equal(await policy.expire(), 1);
  const expired = (await events())[2];
  t.match(expired, { leaseId: c.leaseId, outcome: 'unsettled', status: null, metered: false });
  t.equal((await store.usage(k.id)).length, 2, 'the ledger holds each lease once');
});

t.test('PostgreSQL away: a held key is checked, claimed and settled; the ledger waits in the stream and is written once it is back', async (t) => {
  const database = await startPostgres();
  const counters = await startRedis();
  const store = openRedisStore({ countersUrl: counters.url, databaseUrl: database.url, poolSize: 4 });
  t.teardown(async () => {
    await store.close();
    await counters.destroy();
    await database.destroy();
  });
  await store.migrate();
  const clock = fakeClock('2026-05-05T10:00:00Z');
  const policy = createPolicy({ store, plans: PLANS, clock: clock.now, leaseTtlMs: 30_000 });
  const k = await createKey(store, PLANS, { plan: 'wide', now: clock.now() });
  const call = async (): Promise<void> => {
    const d = await policy.check(`Bearer ${k.secret}`, 'pdf');
    if (!d.allow) throw new Error('refused');
    t.equal(await store.claim({ id: d.leaseId, keyId: k.id, operation: 'pdf' }), 'claimed');
    t.equal(await policy.settle({ lease: d.leaseId, status: 200, cache: 'miss' }, k.id), 'settled');
  };
  await call();
  await database.stop();
  for (let i = 0; i < 5; i++) await call();
  t.type(await store.egress.generation(), 'number', 'the egress lists\' generation is answered without PostgreSQL');
  await database.start();
  // The sink's pool finds its connections gone once; written on a later pass.
  let written = 0;
  for (let i = 0; i < 100 && written < 6; i++) {
    written = await store.usage(k.id).then((u) => u.length, () => 0);
    if (written < 6) await new Promise((r) => setTimeout(r, 300));
  }
  t.equal(written, 6, 'every settle of the outage is in the ledger, once');
  t.equal(await store.monthUsed(k.id, '2026-05'), 6);
});
