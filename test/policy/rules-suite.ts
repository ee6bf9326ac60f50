/**
 * The policy rules (docs/architecture.md §2; spec Parts 5, 7, 8) against a real store, with a fake clock.
 * Run once per backend by rules.sqlite.test.ts, rules.postgres.test.ts and rules.redis.test.ts.
 */
import type { Test } from 'tap';
import { createPolicy, type Decision } from '../../policy/authorize.ts';
import { createKey, revokeKey } from '../../policy/keys.ts';
import { BUILT_IN_PLANS, type Plans } from '../../policy/plans.ts';
import type { PolicyStore } from '../../policy/store/store.ts';
import { type StoreKind, fakeClock, storeHome } from './stores.ts';

const PLANS: Plans = {
  ...BUILT_IN_PLANS,
  // Small limits so boundaries are cheap to reach; burst high so it never interferes.
  tiny: { monthlyQuota: 3, perMinute: 1000, concurrentRenders: 2 },
  edge: { monthlyQuota: 2, perMinute: 3, concurrentRenders: 1 },
  corner: { monthlyQuota: 3, perMinute: 3, concurrentRenders: 2 },
};
const TTL = 45_000;

const bearer = (secret: string): string => `Bearer ${secret}`;

function body(d: Decision): Record<string, unknown> | undefined {
  return d.allow ? undefined : d.error.answer().body;
}

/**
 * How long a store of the parallel test may wait for a PostgreSQL connection: 100 checks at once
 * queue for a pool of 10, and on a loaded machine one connect alone can outlast the production
 * 500 ms (PG_TIMEOUTS.acquireMs). The test is about exactness, not about that budget; what a
 * caller sees when it is spent is tested in rules.postgres.test.ts.
 */
export const PATIENT_ACQUIRE_MS = 60_000;

async function setup(t: Test, kind: StoreKind, start: string, acquireTimeoutMs?: number) {
  const home = await storeHome(kind);
  const store: PolicyStore = home.open(undefined, acquireTimeoutMs);
  t.teardown(async () => {
    await store.close();
    await home.drop();
  });
  await store.migrate();
  const clock = fakeClock(start);
  return { home, store, clock, ...policyOn(store, clock) };
}

export function rulesSuite(t: Test, kind: StoreKind): void {
  t.test('migrations are idempotent', async (t) => {
    const { store, home } = await setup(t, kind, '2026-03-10T12:00:00Z');
    await store.migrate();
    const again = home.open();
    await again.migrate();
    await again.close();
    t.pass('migrated three times');
  });

  t.test('burst window: limit - 1, limit, limit + 1; last second and next window', async (t) => {
    const { clock, policy, key } = await setup(t, kind, '2026-03-10T12:00:00Z');
    const k = await key('free'); // 60/min, 100/month
    const seen: Decision[] = [];
    for (let i = 0; i < 59; i++) seen.push(await policy.check(bearer(k.secret), 'ping'));
    t.ok(seen.every((d) => d.allow), 'requests 1 to 59 granted');
    const last = seen[58]!;
    t.same(last.rate, { limit: 60, remaining: 1 }, 'limit - 1: one left');
    clock.set('2026-03-10T12:00:59.000Z'); // the last second of the window
    const at = await policy.check(bearer(k.secret), 'ping');
    t.equal(at.allow, true, 'limit: request 60 granted');
    t.same(at.rate, { limit: 60, remaining: 0 });
    const over = await policy.check(bearer(k.secret), 'ping');
    t.equal(over.allow, false, 'limit + 1 refused');
    t.same(body(over), { error: 'rate_limited', limit: 60, windowSec: 60, retryAfterSec: 1 });
    t.same(over.rate, { limit: 60, remaining: 0 }, 'x-ratelimit-* on the refusal');
    if (!over.allow) t.equal(over.error.answer().headers['retry-after'], '1');
    clock.set('2026-03-10T12:00:59.999Z');
    const stillOver = await policy.check(bearer(k.secret), 'ping');
    t.same(body(stillOver), { error: 'rate_limited', limit: 60, windowSec: 60, retryAfterSec: 1 }, 'last millisecond: at least 1');
    clock.set('2026-03-10T12:01:00.000Z'); // first instant of the next window
    const next = await policy.check(bearer(k.secret), 'ping');
    t.equal(next.allow, true, 'next window grants again');
    t.same(next.rate, { limit: 60, remaining: 59 });
  });

  t.test('retry-after counts the seconds to the window end', async (t) => {
    const { clock, policy, key } = await setup(t, kind, '2026-03-10T12:00:00Z');
    const k = await key('free');
    for (let i = 0; i < 60; i++) await policy.check(bearer(k.secret), 'ping');
    const rows: Array<[string, number]> = [
      ['2026-03-10T12:00:00.000Z', 60],
      ['2026-03-10T12:00:00.001Z', 60],
      ['2026-03-10T12:00:17.500Z', 43],
      ['2026-03-10T12:00:58.999Z', 2],
      ['2026-03-10T12:00:59.000Z', 1],
    ];
    for (const [at, want] of rows) {
      clock.set(at);
      const d = await policy.check(bearer(k.secret), 'ping');
      t.equal(body(d)?.retryAfterSec, want, at);
      if (!d.allow) t.equal(d.error.answer().headers['retry-after'], String(want), `${at} header`);
    }
  });

  t.test('monthly quota: limit - 1, limit, limit + 1 on the free plan', async (t) => {
    const { clock, policy, key, store } = await setup(t, kind, '2026-04-10T00:00:00Z');
    const k = await key('free');
    const results: Decision[] = [];
    for (let i = 0; i < 101; i++) {
      if (i % 50 === 0) clock.advance(60_000); // stay under the burst limit
      const d = await policy.check(bearer(k.secret), 'ping');
      results.push(d);
      if (d.allow) await policy.settle({ lease: d.leaseId, status: 200 });
    }
    t.ok(results.slice(0, 99).every((d) => d.allow), 'calls 1 to 99 granted');
    t.equal(results[99]!.allow, true, 'call 100 (the limit) granted');
    t.same(body(results[100]!), { error: 'quota_exceeded', limit: 100, month: '2026-04', resetsAt: '2026-05-01T00:00:00.000Z' });
    t.equal(await store.monthUsed(k.id, '2026-04'), 100);
    t.equal((await store.usage(k.id)).filter((u) => u.metered).length, 100, 'ledger matches the count');
  });

  t.test('month boundary: 23:59:59 on the last day, then 00:00:00 (28, 29, 30, 31 days)', async (t) => {
    const rows: Array<[string, string, string, string]> = [
      ['31-day January', '2026-01-31T23:59:59.000Z', '2026-01', '2026-02-01T00:00:00.000Z'],
      ['28-day February', '2026-02-28T23:59:59.000Z', '2026-02', '2026-03-01T00:00:00.000Z'],
      ['29-day February (leap)', '2028-02-29T23:59:59.000Z', '2028-02', '2028-03-01T00:00:00.000Z'],
      ['30-day April', '2026-04-30T23:59:59.000Z', '2026-04', '2026-05-01T00:00:00.000Z'],
      ['31-day December into a new year', '2026-12-31T23:59:59.000Z', '2026-12', '2027-01-01T00:00:00.000Z'],
    ];
    const { clock, policy, key } = await setup(t, kind, '2026-01-01T00:00:00Z');
    for (const [name, lastSecond, month, resetsAt] of rows) {
      clock.set(lastSecond);
      const k = await key('tiny');
      for (let i = 0; i < 3; i++) {
        const d = await policy.check(bearer(k.secret), 'ping');
        t.equal(d.allow, true, `${name}: call ${i + 1} granted`);
        if (d.allow) await policy.settle({ lease: d.leaseId, status: 200 });
      }
      clock.set(Date.parse(lastSecond) + 999);
      t.same(body(await policy.check(bearer(k.secret), 'ping')), { error: 'quota_exceeded', limit: 3, month, resetsAt }, `${name}: spent`);
      clock.set(resetsAt);
      t.equal((await policy.check(bearer(k.secret), 'ping')).allow, true, `${name}: 00:00:00 of the next month grants`);
    }
  });

  t.test('the last second of a month is the last of a window: both start again at 00:00:00', async (t) => {
    const rows: Array<[string, string, string, string]> = [
      ['28-day February', '2026-02-28T23:59:59.000Z', '2026-02', '2026-03'],
      ['30-day September', '2026-09-30T23:59:59.000Z', '2026-09', '2026-10'],
      ['31-day October', '2026-10-31T23:59:59.000Z', '2026-10', '2026-11'],
    ];
    const { clock, policy, key, store } = await setup(t, kind, '2026-01-01T00:00:00Z');
    for (const [name, lastSecond, month, next] of rows) {
      clock.set(lastSecond);
      const k = await key('corner'); // 3 a minute and 3 a month
      const seen: Decision[] = [];
      for (let i = 0; i < 4; i++) seen.push(await policy.check(bearer(k.secret), 'ping'));
      t.same(seen.map((d) => d.rate?.remaining), [2, 1, 0, 0], `${name}: limit - 1, limit, limit + 1`);
      t.same(seen.map((d) => d.allow), [true, true, true, false], name);
      t.same(body(seen[3]!), { error: 'rate_limited', limit: 3, windowSec: 60, retryAfterSec: 1 }, `${name}: the window answers first`);
      clock.set(Date.parse(lastSecond) + 1000); // 00:00:00.000 of the next month
      const first = await policy.check(bearer(k.secret), 'ping');
      t.equal(first.allow, true, `${name}: 00:00:00 grants`);
      t.same(first.rate, { limit: 3, remaining: 2 }, `${name}: in a fresh window`);
      t.equal(await store.monthUsed(k.id, month), 3, `${name}: the old month keeps its 3`);
      t.equal(await store.monthUsed(k.id, next), 1, `${name}: the new month starts at 1`);
    }
  });

  t.test('a call checked at 23:59:59 and settled after midnight counts in the month it was checked', async (t) => {
    const { clock, policy, key, store } = await setup(t, kind, '2026-04-30T23:59:59Z');
    const k = await key('corner');
    const metered = await policy.check(bearer(k.secret), 'og');
    const unmetered = await policy.check(bearer(k.secret), 'og');
    if (!metered.allow || !unmetered.allow) throw new Error('not granted');
    clock.set('2026-05-01T00:00:01Z');
    t.equal(await policy.settle({ lease: metered.leaseId, status: 200, cache: 'miss' }), 'settled');
    t.equal(await policy.settle({ lease: unmetered.leaseId, status: 422, error: 'url_rejected' }), 'settled');
    t.equal(await store.monthUsed(k.id, '2026-04'), 1, 'April: the metered call');
    t.equal(await store.monthUsed(k.id, '2026-05'), 0, 'May: nothing');
    // Both records in April. Which is listed first is not asserted: on Redis counters two settles
    // in the same millisecond may be written by two sink consumers (docs/operations.md "Ledger stream").
    const records = await store.usage(k.id);
    t.same(records.map((r) => [r.month, r.metered]).sort(), [['2026-04', false], ['2026-04', true]], 'both recorded in April');
  });

  t.test('render places: limit - 1, limit, limit + 1', async (t) => {
    const rows: Array<[string, number]> = [['free', 1], ['starter', 2], ['pro', 2], ['scale', 2], ['corner', 2]];
    const { policy, key, store } = await setup(t, kind, '2026-05-05T10:00:00Z');
    for (const [plan, places] of rows) {
      const k = await key(plan);
      const seen: Decision[] = [];
      for (let i = 0; i < places + 1; i++) seen.push(await policy.check(bearer(k.secret), i % 2 === 0 ? 'screenshot' : 'og'));
      t.ok(seen.slice(0, places).every((d) => d.allow), `${plan}: up to the limit of ${places} granted`);
      t.same(body(seen[places]!), { error: 'concurrent_limit', limit: places }, `${plan}: limit + 1 refused`);
      t.equal(await store.inFlight(k.id), places, `${plan}: ${places} held`);
    }
  });

  t.test('reservations in flight count against the quota; unmetered outcomes give them back', async (t) => {
    const { policy, key, store } = await setup(t, kind, '2026-05-05T10:00:00Z');
    const k = await key('tiny'); // 3 a month
    const granted = [];
    for (let i = 0; i < 3; i++) {
      const d = await policy.check(bearer(k.secret), 'ping');
      if (d.allow) granted.push(d.leaseId);
    }
    t.equal(granted.length, 3);
    t.same(body(await policy.check(bearer(k.secret), 'ping'))?.error, 'quota_exceeded', 'three in flight spend the quota');
    t.equal(await policy.settle({ lease: granted[0]!, status: 422, error: 'url_rejected' }), 'settled');
    t.equal(await store.monthUsed(k.id, '2026-05'), 2, '422 is not metered: the reservation returns');
    const again = await policy.check(bearer(k.secret), 'ping');
    t.equal(again.allow, true, 'the returned call can be used');
    t.equal(await policy.settle({ lease: granted[1]!, status: 200, cache: 'hit' }), 'settled');
    t.equal(await store.monthUsed(k.id, '2026-05'), 3, 'a hit is metered');
  });

  t.test('metering by outcome (spec Part 8 rule 4; 422 recorded, not metered; 400, 413 and 503 write no usage)', async (t) => {
    const { policy, key, store } = await setup(t, kind, '2026-05-05T10:00:00Z');
    const k = await key('scale');
    // [name, outcome, the usage record's metered flag, or undefined for no record at all]
    const rows: Array<[string, { status: number; error?: string; cache?: 'hit' | 'miss' }, boolean | undefined]> = [
      ['200 miss', { status: 200, cache: 'miss' }, true],
      ['200 hit', { status: 200, cache: 'hit' }, true],
      ['502 render_failed', { status: 502, error: 'render_failed' }, true],
      ['502 render_too_large', { status: 502, error: 'render_too_large' }, true],
      ['504 render_timeout', { status: 504, error: 'render_timeout' }, true],
      ['400 validation', { status: 400 }, undefined],
      ['413 payload_too_large', { status: 413, error: 'payload_too_large' }, undefined],
      ['422 url_rejected', { status: 422, error: 'url_rejected' }, false],
      ['503 busy', { status: 503, error: 'busy' }, undefined],
      ['503 guard_unverified', { status: 503, error: 'guard_unverified' }, undefined],
    ];
    for (const [name, outcome, metered] of rows) {
      const d = await policy.check(bearer(k.secret), 'screenshot');
      if (!d.allow) throw new Error(`${name}: not granted`);
      t.equal(await store.inFlight(k.id), 1, `${name}: the render holds a place`);
      t.equal(await policy.settle({ lease: d.leaseId, ...outcome }), 'settled', name);
      t.equal(await store.inFlight(k.id), 0, `${name}: the place is freed`);
      t.equal(await store.openLeases(k.id), 0, `${name}: the lease is closed`);
      const rec = (await store.usage(k.id)).find((u) => u.leaseId === d.leaseId);
      if (metered === undefined) {
        t.equal(rec, undefined, `${name}: no usage record`);
      } else {
        t.match(rec, { keyId: k.id, operation: 'screenshot', status: outcome.status, error: outcome.error ?? null,
          cache: outcome.cache ?? null, metered, outcome: 'settled', month: '2026-05' }, name);
      }
      t.equal(await policy.settle({ lease: d.leaseId, ...outcome }), 'already', `${name}: a repeated settle is idempotent`);
    }
    t.same((await store.usage(k.id)).map((u) => u.status), [200, 200, 502, 502, 504, 422], 'the ledger: metered outcomes and the 422');
    t.equal(await store.monthUsed(k.id, '2026-05'), 5, 'five metered outcomes');
    t.equal(await store.inFlight(k.id), 0, 'every place freed');
  });

  t.test('a 400 or a 503 takes back its reservation and its place, writes no usage, and is remembered for a day', async (t) => {
    const { policy, key, store, clock } = await setup(t, kind, '2026-05-05T10:00:00Z');
    const k = await key('edge'); // 2 a month, 1 render place
    const first = await policy.check(bearer(k.secret), 'pdf');
    if (!first.allow) throw new Error('not granted');
    t.same(body(await policy.check(bearer(k.secret), 'pdf')), { error: 'concurrent_limit', limit: 1 }, 'the place is held');
    t.equal(await policy.settle({ lease: first.leaseId, status: 400 }), 'settled');
    const second = await policy.check(bearer(k.secret), 'og');
    if (!second.allow) throw new Error('the freed place is not granted');
    t.equal(await policy.settle({ lease: second.leaseId, status: 503, error: 'busy' }), 'settled');
    t.equal(await store.monthUsed(k.id, '2026-05'), 0, 'neither spends the quota');
    t.same(await store.usage(k.id), [], 'neither writes usage');
    t.equal(await policy.settle({ lease: first.leaseId, status: 200, cache: 'miss' }), 'already', 'a later settle cannot meter a closed lease');
    t.equal(await store.monthUsed(k.id, '2026-05'), 0);
    for (const status of [400, 503]) {
      clock.advance(60_000); // a fresh burst window (3 a minute)
      const e = await policy.check(bearer(k.secret), 'screenshot');
      if (!e.allow) throw new Error('not granted');
      const pair = await Promise.all([policy.settle({ lease: e.leaseId, status }), policy.settle({ lease: e.leaseId, status })]);
      t.same([...pair].sort(), ['already', 'settled'], `parallel duplicate settles of a ${status}: one wins`);
    }
    t.same(await store.usage(k.id), [], 'still no usage');
    t.equal(await store.monthUsed(k.id, '2026-05'), 0);
    t.equal(await store.inFlight(k.id), 0);
    clock.advance(24 * 3600_000 + 1000);
    await policy.expire();
    t.equal(await policy.settle({ lease: first.leaseId, status: 400 }), 'unknown', 'forgotten after a day');
    t.same(await store.usage(k.id), [], 'the sweep writes no usage for them either');
  });

  t.test('settle is idempotent; an unknown lease is said so', async (t) => {
    const { policy, key, store } = await setup(t, kind, '2026-05-05T10:00:00Z');
    const k = await key('starter');
    const d = await policy.check(bearer(k.secret), 'pdf');
    if (!d.allow) throw new Error('not granted');
    t.equal(await policy.settle({ lease: d.leaseId, status: 200, cache: 'miss' }), 'settled');
    t.equal(await policy.settle({ lease: d.leaseId, status: 200, cache: 'miss' }), 'already');
    t.equal(await policy.settle({ lease: d.leaseId, status: 503, error: 'busy' }), 'already', 'a different retry changes nothing');
    t.equal((await store.usage(k.id)).length, 1, 'one usage record');
    t.equal(await store.monthUsed(k.id, '2026-05'), 1);
    t.equal(await policy.settle({ lease: 'no-such-lease', status: 200 }), 'unknown');
    const twice = await Promise.all([1, 2, 3].map(async () => {
      const e = await policy.check(bearer(k.secret), 'ping');
      if (!e.allow) throw new Error('not granted');
      return Promise.all([policy.settle({ lease: e.leaseId, status: 200 }), policy.settle({ lease: e.leaseId, status: 200 })]);
    }));
    for (const pair of twice) t.same([...pair].sort(), ['already', 'settled'], 'parallel duplicate settles: one wins');
    t.equal((await store.usage(k.id)).length, 4);
  });

  t.test('malformed settle requests are refused', async (t) => {
    const { policy } = await setup(t, kind, '2026-05-05T10:00:00Z');
    for (const bad of [null, [], 'x', {}, { lease: 'a' }, { lease: 'a', status: '200' }, { lease: 'a b', status: 200 },
      { lease: 'a', status: 200, cache: 'warm' }, { lease: 'a', status: 200, extra: 1 }, { lease: 'a', status: 99 }]) {
      await t.rejects(policy.settle(bad), { name: 'BadSettle' }, JSON.stringify(bad));
    }
  });

  t.test('concurrency: render places per key; ping holds none', async (t) => {
    const { policy, key, store } = await setup(t, kind, '2026-05-05T10:00:00Z');
    const k = await key('free'); // 1 concurrent render
    const first = await policy.check(bearer(k.secret), 'og');
    t.equal(first.allow, true);
    const second = await policy.check(bearer(k.secret), 'html-to-image');
    t.same(body(second), { error: 'concurrent_limit', limit: 1 });
    t.same(second.rate, { limit: 60, remaining: 58 }, 'a concurrency refusal counts in the burst window');
    const ping = await policy.check(bearer(k.secret), 'ping');
    t.equal(ping.allow, true, 'ping needs no render place');
    if (first.allow) await policy.settle({ lease: first.leaseId, status: 200, cache: 'miss' });
    t.equal(await store.inFlight(k.id), 0);
    t.equal((await policy.check(bearer(k.secret), 'pdf')).allow, true, 'the freed place is usable');
    t.equal(await store.monthUsed(k.id, '2026-05'), 3, 'the refused check reserved nothing');
  });

  t.test('order: burst before quota before concurrency; refusals write nothing', async (t) => {
    const { policy, key, clock, store } = await setup(t, kind, '2026-05-05T10:00:00Z');
    const k = await key('edge'); // 2 a month, 3 a minute, 1 render at a time
    const ask = (op: 'ping' | 'og') => policy.check(bearer(k.secret), op);
    t.equal((await ask('og')).allow, true, 'render granted: quota 1/2, place 1/1, window 1/3');
    t.same(body(await ask('og')), { error: 'concurrent_limit', limit: 1 }, 'quota left, no place');
    t.equal((await ask('ping')).allow, true, 'quota 2/2, window 3/3');
    t.same(body(await ask('og'))?.error, 'rate_limited', 'window, quota and place all spent: burst answers');
    clock.advance(60_000);
    t.same(body(await ask('og'))?.error, 'quota_exceeded', 'quota and place spent: quota answers');
    t.equal(await store.openLeases(k.id), 2, 'the three refusals hold no lease');
    clock.advance(TTL);
    t.equal(await policy.expire(), 2);
    t.equal((await store.usage(k.id)).length, 2, 'and write no usage: only the two grants are in the ledger');
  });

  t.test('missing, malformed, unknown and revoked keys: the same 401', async (t) => {
    const { policy, key, store } = await setup(t, kind, '2026-05-05T10:00:00Z');
    const k = await key('pro');
    const gone = await key('pro');
    t.equal((await policy.check(bearer(gone.secret), 'ping')).allow, true, 'works before revocation');
    t.equal(await revokeKey(store, gone.id), true);
    t.equal(await revokeKey(store, gone.id), false, 'revoking twice says so');
    const cases: Array<[string, string | undefined]> = [
      ['missing', undefined],
      ['empty', ''],
      ['not bearer', `Basic ${Buffer.from('a:b').toString('base64')}`],
      ['no prefix', bearer(k.secret.slice(3))],
      ['truncated', bearer(k.secret.slice(0, -1))],
      ['bearer without value', 'Bearer '],
      ['unknown', bearer('sk_' + 'A'.repeat(43))],
      ['revoked', bearer(gone.secret)],
    ];
    for (const [name, header] of cases) {
      const d = await policy.check(header, 'ping');
      t.equal(d.allow, false, name);
      if (!d.allow) t.same(d.error.answer(), {
        status: 401,
        headers: { 'content-type': 'application/json; charset=utf-8', 'www-authenticate': 'Bearer' },
        body: { error: 'unauthorized' },
      }, name);
      t.equal(d.rate, undefined, `${name}: no rate position for an unknown caller`);
    }
    t.equal((await policy.check(`bearer ${k.secret}`, 'ping')).allow, true, 'the scheme is case-insensitive');
  });

  t.test('an unsettled lease expires after budget + grace, frees its places, is recorded unsettled', async (t) => {
    const { policy, key, store, clock } = await setup(t, kind, '2026-06-30T23:59:30Z');
    const k = await key('free');
    const d = await policy.check(bearer(k.secret), 'screenshot');
    if (!d.allow) throw new Error('not granted');
    t.same(body(await policy.check(bearer(k.secret), 'screenshot')), { error: 'concurrent_limit', limit: 1 });
    clock.advance(TTL - 1);
    t.equal(await policy.expire(), 0, 'one millisecond before expiry: nothing expires');
    t.equal(await store.inFlight(k.id), 1);
    clock.advance(1);
    t.equal(await policy.expire(), 1, 'at expiry the lease goes');
    t.equal(await policy.expire(), 0, 'and only once');
    t.equal(await store.inFlight(k.id), 0, 'its place is free');
    t.equal(await store.monthUsed(k.id, '2026-06'), 0, 'its reservation is returned to the month it was taken in');
    t.match(await store.usage(k.id), [{ leaseId: d.leaseId, outcome: 'unsettled', metered: false, status: null, month: '2026-06' }]);
    t.equal(await policy.settle({ lease: d.leaseId, status: 200 }), 'already', 'a late settle changes nothing');
    t.equal((await store.usage(k.id)).length, 1);
    t.equal((await policy.check(bearer(k.secret), 'screenshot')).allow, true);
  });

  t.test('parallel checks never grant more than the quota or the render places', async (t) => {
    const { policy, key, store, home, clock } = await setup(t, kind, '2026-07-07T07:07:07Z', PATIENT_ACQUIRE_MS);
    // A second store on the same database plays a second replica.
    const replica = home.open(undefined, PATIENT_ACQUIRE_MS);
    t.teardown(() => replica.close());
    await parallelChecksExact(t, { policy, store, replica, key, clock });
  });
}

/**
 * 100 checks at once, alternating between two policies on two stores of one database (two
 * replicas): never more granted than the render places, the month's quota or the minute's burst.
 */
export async function parallelChecksExact(t: Test, o: {
  policy: ReturnType<typeof createPolicy>;
  store: PolicyStore;
  replica: PolicyStore;
  key: (plan: string) => ReturnType<typeof createKey>;
  clock: ReturnType<typeof fakeClock>;
}): Promise<void> {
  const { policy, store, key, clock } = o;
  const other = createPolicy({ store: o.replica, plans: PLANS, clock: clock.now, leaseTtlMs: TTL });
  const k = await key('scale'); // 30,000 a month, 240 a minute, 2 places
  const both = (i: number) => (i % 2 === 0 ? policy : other);
  const renders = await Promise.all(Array.from({ length: 100 }, (_, i) => both(i).check(bearer(k.secret), 'pdf')));
  t.equal(renders.filter((d) => d.allow).length, 2, '100 parallel renders, 2 places: exactly 2 granted');
  t.equal(renders.filter((d) => body(d)?.error === 'concurrent_limit').length, 98);
  t.equal(await store.inFlight(k.id), 2);

  const q = await key('tiny'); // 3 a month
  const pings = await Promise.all(Array.from({ length: 100 }, (_, i) => both(i).check(bearer(q.secret), 'ping')));
  t.equal(pings.filter((d) => d.allow).length, 3, '100 parallel calls, 3 left: exactly 3 granted');
  t.equal(await store.monthUsed(q.id, '2026-07'), 3);

  const w = await key('free'); // 60 a minute
  clock.advance(60_000);
  const burst = await Promise.all(Array.from({ length: 100 }, (_, i) => both(i).check(bearer(w.secret), 'ping')));
  t.equal(burst.filter((d) => d.allow).length, 60, '100 parallel calls, 60 a minute: exactly 60 granted');
}

/** A policy on `store` with this suite's plans, and its key maker: for a store a test opens itself. */
export function policyOn(store: PolicyStore, clock: ReturnType<typeof fakeClock>) {
  return {
    policy: createPolicy({ store, plans: PLANS, clock: clock.now, leaseTtlMs: TTL }),
    key: async (plan: string) => createKey(store, PLANS, { plan, now: clock.now() }),
  };
}
