/**
 * The ext_authz + settle HTTP server (docs/architecture.md §2) over real sockets, on a real store.
 * Run once per backend by server.sqlite.test.ts, server.postgres.test.ts and server.redis.test.ts.
 */
import net from 'node:net';
import type { Test } from 'tap';
import { loadConfig } from '../../lib/config.ts';
import { createLogger } from '../../lib/log.ts';
import { createKey } from '../../policy/keys.ts';
import { BUILT_IN_PLANS } from '../../policy/plans.ts';
import { createPolicyServer } from '../../policy/server.ts';
import { type StoreKind, fakeClock, storeHome } from './stores.ts';
import { type Reply, pooledClient, request } from './http.ts';
import { TEST_RENDERER_AUTH, leaseIdOf, otherLeaseKeys, signedLease, testLeaseKeys } from '../lib/leases.ts';
import { CLAIM_PATH, EXT_AUTHZ_PREFIX, KEY_ID_HEADER, LEASE_HEADER, RATELIMIT_LIMIT_HEADER, RATELIMIT_REMAINING_HEADER, RELEASE_PATH, SETTLE_PATH } from '../../lib/policy-contract.ts';
import { LIVE_PATH, METRICS_PATH, READY_PATH } from '../../lib/admin.ts';
import { MAX_LEASE_CHARS } from '../../lib/lease.ts';

/** A body longer than any claim or settle (a lease of the longest form and its outcome) may be. */
const OVER_BODY_LIMIT = MAX_LEASE_CHARS + 4096;

const PLANS = {
  ...BUILT_IN_PLANS,
  tiny: { monthlyQuota: 2, perMinute: 3, concurrentRenders: 1 },
  three: { monthlyQuota: 20, perMinute: 100_000, concurrentRenders: 3 },
  seven: { monthlyQuota: 7, perMinute: 100_000, concurrentRenders: 2 },
};

async function serve(t: Test, kind: StoreKind, timeoutMs?: number) {
  const home = await storeHome(kind);
  const lines: string[] = [];
  const logger = createLogger('policy', { level: 'debug', sink: (l) => lines.push(l) });
  const clock = fakeClock('2026-08-31T23:59:00Z');
  const store = home.open(timeoutMs);
  const config = loadConfig({ PORT: '0', TINTYPE_POLICY_SETTLE_PORT: '0', TINTYPE_RENDER_TIMEOUT_MS: '5000', TINTYPE_LEASE_GRACE_MS: '1000', ...home.env });
  const server = createPolicyServer({ config, logger, store, plans: PLANS, clock: clock.now, host: '127.0.0.1' });
  await server.start();
  t.teardown(async () => {
    await server.stop();
    await home.drop();
  });
  const port = server.address().port;
  /** The renderers' listener: claim, release, settle. */
  const settlePort = server.settleAddress().port;
  const key = (plan: string) => createKey(store, PLANS, { plan, now: clock.now() });
  return { home, server, port, settlePort, store, clock, lines, key };
}

export function serverSuite(t: Test, kind: StoreKind): void {
  t.test('two listeners: ext_authz on the edge\'s only; claim, release and settle on the renderers\' only; a lease is claimed once', async (t) => {
    const { port, settlePort, key } = await serve(t, kind);
    const k = await key('free');
    const a = await request(port, 'POST', `${EXT_AUTHZ_PREFIX}/v1/pdf`, { authorization: `Bearer ${k.secret}` });
    t.equal(a.status, 200);
    const lease = String(a.headers[LEASE_HEADER]);
    const body = (extra: object = {}) => JSON.stringify({ lease, ...extra });
    for (const p of [SETTLE_PATH, CLAIM_PATH, RELEASE_PATH]) t.equal((await request(port, 'POST', p, {}, body())).status, 404, `${p} is not on the edge's listener`);
    t.equal((await request(settlePort, 'POST', `${EXT_AUTHZ_PREFIX}/v1/pdf`, { authorization: `Bearer ${k.secret}` })).status, 404, 'ext_authz is not on the renderers\' listener');
    t.equal((await request(settlePort, 'GET', READY_PATH)).status, 200, 'probes answer on both');
    const claim = async (b: string) => (await request(settlePort, 'POST', CLAIM_PATH, { ...TEST_RENDERER_AUTH, 'content-type': 'application/json' }, b)).status;
    t.equal(await claim(body()), 204, 'claimed');
    t.equal(await claim(body()), 409, 'held: a second attempt is refused');
    t.equal((await request(settlePort, 'POST', RELEASE_PATH, { ...TEST_RENDERER_AUTH }, body())).status, 204, 'released (a 503 the edge retries)');
    t.equal(await claim(body()), 204, 'the retry claims it');
    t.equal((await request(settlePort, 'POST', SETTLE_PATH, { ...TEST_RENDERER_AUTH }, body({ status: 200, cache: 'miss' }))).status, 204, 'settled');
    t.equal(await claim(body()), 410, 'spent once settled');
    t.equal(await claim(JSON.stringify({ lease: signedLease('pdf') })), 410, 'a signed lease policy never granted is no lease to claim');
    t.equal(await claim(JSON.stringify({ lease: otherLeaseKeys().sign(testLeaseKeys.verify(lease)!) })), 401, 'forged: 401');
    t.equal(await claim('{"lease":7}'), 400, 'not a lease: 400');
    t.equal(await claim('x'.repeat(OVER_BODY_LIMIT)), 413);
    t.equal((await request(settlePort, 'GET', CLAIM_PATH, { ...TEST_RENDERER_AUTH })).status, 405);
  });

  t.test('allow: 200 with lease, key id and rate position; no secret anywhere', async (t) => {
    const { port, settlePort, key, lines } = await serve(t, kind);
    const k = await key('starter');
    const r = await request(port, 'GET', `${EXT_AUTHZ_PREFIX}/v1/ping`, { authorization: `Bearer ${k.secret}`, traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' });
    t.equal(r.status, 200);
    t.match(testLeaseKeys.verify(String(r.headers[LEASE_HEADER])), { operation: 'ping' }, 'the lease is signed with TINTYPE_LEASE_SIGNING_KEY');
    t.equal(r.headers[KEY_ID_HEADER], k.id);
    t.equal(r.headers[RATELIMIT_LIMIT_HEADER], '120');
    t.equal(r.headers[RATELIMIT_REMAINING_HEADER], '119');
    t.equal(r.body, '');
    for (const op of [['POST', `${EXT_AUTHZ_PREFIX}/v1/screenshot`], ['POST', `${EXT_AUTHZ_PREFIX}/v1/html-to-image`], ['POST', `${EXT_AUTHZ_PREFIX}/v1/pdf`], ['GET', `${EXT_AUTHZ_PREFIX}/v1/og?template=title&title=Hi`]]) {
      const a = await request(port, op[0]!, op[1]!, { authorization: `Bearer ${k.secret}` }, op[0] === 'POST' ? '' : undefined);
      t.equal(a.status, 200, op.join(' '));
      const s = await request(settlePort, 'POST', SETTLE_PATH, { ...TEST_RENDERER_AUTH, 'content-type': 'application/json' },
        JSON.stringify({ lease: a.headers[LEASE_HEADER], status: 200, cache: 'miss' }));
      t.equal(s.status, 204);
    }
    t.ok(lines.length > 0, 'the server logged');
    t.notOk(lines.some((l) => l.includes(k.secret) || l.includes(k.secret.slice(3))), 'no log line holds the secret');
  });

  t.test('unknown paths and wrong methods are refused before any key work', async (t) => {
    const { port, key } = await serve(t, kind);
    const k = await key('starter');
    const rows: Array<[string, string, number, string]> = [
      ['GET', `${EXT_AUTHZ_PREFIX}/v1/nothing`, 404, 'not_found'],
      ['GET', `${EXT_AUTHZ_PREFIX}/`, 404, 'not_found'],
      ['GET', `${EXT_AUTHZ_PREFIX}/v2/ping`, 404, 'not_found'],
      ['GET', `${EXT_AUTHZ_PREFIX}/v1/ping/`, 404, 'not_found'],
      ['POST', `${EXT_AUTHZ_PREFIX}/v1/ping`, 405, 'method_not_allowed'],
      ['GET', `${EXT_AUTHZ_PREFIX}/v1/screenshot`, 405, 'method_not_allowed'],
      ['GET', '/v1/ping', 404, 'not_found'],
    ];
    for (const [method, path, status, error] of rows) {
      const r = await request(port, method, path, { authorization: `Bearer ${k.secret}` });
      t.equal(r.status, status, `${method} ${path}`);
      t.same(JSON.parse(r.body), { error }, `${method} ${path}`);
      t.equal(r.headers[LEASE_HEADER], undefined);
    }
  });

  t.test('missing, malformed, unknown and revoked keys get byte-identical 401s; never a query key', async (t) => {
    const { port, key, store, lines } = await serve(t, kind);
    const k = await key('pro');
    const revoked = await key('pro');
    await store.revokeKey(revoked.id, Date.now());
    const cases: Array<[string, string, Record<string, string>]> = [
      ['missing', `${EXT_AUTHZ_PREFIX}/v1/ping`, {}],
      ['malformed', `${EXT_AUTHZ_PREFIX}/v1/ping`, { authorization: `Bearer ${k.secret}!` }],
      ['unknown', `${EXT_AUTHZ_PREFIX}/v1/ping`, { authorization: `Bearer sk_${'x'.repeat(43)}` }],
      ['revoked', `${EXT_AUTHZ_PREFIX}/v1/ping`, { authorization: `Bearer ${revoked.secret}` }],
      ['query string key', `${EXT_AUTHZ_PREFIX}/v1/og?template=title&title=a&api_key=${k.secret}`, {}],
      ['query string bearer', `${EXT_AUTHZ_PREFIX}/v1/ping?authorization=Bearer%20${k.secret}`, {}],
    ];
    const replies = [];
    for (const [name, path, headers] of cases) {
      const r = await request(port, 'GET', path, headers);
      replies.push(r);
      t.equal(r.status, 401, name);
    }
    const first = replies[0]!;
    t.same(first.stableHeaders, ['content-type: application/json; charset=utf-8', 'www-authenticate: Bearer', 'content-length: 24']);
    t.equal(first.body, '{"error":"unauthorized"}');
    replies.forEach((r, i) => {
      t.same(r.stableHeaders, first.stableHeaders, `${cases[i]![0]}: same headers`);
      t.equal(r.body, first.body, `${cases[i]![0]}: same bytes`);
    });
    t.notOk(lines.some((l) => l.includes(k.secret.slice(3)) || l.includes(revoked.secret.slice(3))), 'no secret logged');
  });

  t.test('429 answers carry their fields, retry-after and the rate position', async (t) => {
    const { port, settlePort, key, clock } = await serve(t, kind);
    const k = await key('tiny'); // 2 a month, 3 a minute, 1 render
    const auth = { authorization: `Bearer ${k.secret}` };
    const first = await request(port, 'GET', `${EXT_AUTHZ_PREFIX}/v1/og?template=title&title=a`, auth);
    t.equal(first.status, 200);
    const busy = await request(port, 'POST', `${EXT_AUTHZ_PREFIX}/v1/pdf`, auth);
    t.equal(busy.status, 429);
    t.same(JSON.parse(busy.body), { error: 'concurrent_limit', limit: 1 });
    t.equal(busy.headers[RATELIMIT_REMAINING_HEADER], '1');
    const ping = await request(port, 'GET', `${EXT_AUTHZ_PREFIX}/v1/ping`, auth);
    t.equal(ping.status, 200);
    clock.set('2026-08-31T23:59:45.250Z');
    const limited = await request(port, 'GET', `${EXT_AUTHZ_PREFIX}/v1/ping`, auth);
    t.equal(limited.status, 429);
    t.same(JSON.parse(limited.body), { error: 'rate_limited', limit: 3, windowSec: 60, retryAfterSec: 15 });
    t.equal(limited.headers['retry-after'], '15');
    t.equal(limited.headers[RATELIMIT_LIMIT_HEADER], '3');
    t.equal(limited.headers[RATELIMIT_REMAINING_HEADER], '0');
    clock.set('2026-08-31T23:59:59Z');
    t.equal((await request(port, 'GET', `${EXT_AUTHZ_PREFIX}/v1/ping`, auth)).status, 429, 'same window, still limited');
    clock.set('2026-09-01T00:00:00Z');
    const settled = await request(settlePort, 'POST', SETTLE_PATH, { ...TEST_RENDERER_AUTH }, JSON.stringify({ lease: first.headers[LEASE_HEADER], status: 200, cache: 'hit' }));
    t.equal(settled.status, 204);
    clock.set('2026-09-01T00:00:30Z');
    const fresh = await request(port, 'GET', `${EXT_AUTHZ_PREFIX}/v1/ping`, auth);
    t.equal(fresh.status, 200, 'a new month and window');
  });

  t.test('quota_exceeded over HTTP', async (t) => {
    const { port, key, clock } = await serve(t, kind);
    const k = await key('tiny');
    const auth = { authorization: `Bearer ${k.secret}` };
    for (let i = 0; i < 2; i++) t.equal((await request(port, 'GET', `${EXT_AUTHZ_PREFIX}/v1/ping`, auth)).status, 200);
    clock.set('2026-08-31T23:59:59Z');
    const r = await request(port, 'GET', `${EXT_AUTHZ_PREFIX}/v1/ping`, auth);
    t.equal(r.status, 429);
    t.same(JSON.parse(r.body), { error: 'quota_exceeded', limit: 2, month: '2026-08', resetsAt: '2026-09-01T00:00:00.000Z' });
    t.equal(r.headers['retry-after'], undefined, 'retry-after belongs to rate_limited and busy only');
    t.equal(r.headers[RATELIMIT_REMAINING_HEADER], '0');
  });

  t.test('settle over HTTP: 204, idempotent, unknown 404, malformed 400, GET 405', async (t) => {
    const { port, settlePort, key, store } = await serve(t, kind);
    const k = await key('pro');
    const a = await request(port, 'POST', `${EXT_AUTHZ_PREFIX}/v1/screenshot`, { authorization: `Bearer ${k.secret}` });
    const lease = a.headers[LEASE_HEADER];
    const body = JSON.stringify({ lease, status: 504, error: 'render_timeout' });
    t.equal((await request(settlePort, 'POST', SETTLE_PATH, { ...TEST_RENDERER_AUTH, 'content-type': 'application/json' }, body)).status, 204);
    t.equal((await request(settlePort, 'POST', SETTLE_PATH, { ...TEST_RENDERER_AUTH, 'content-type': 'application/json' }, body)).status, 204, 'again: 204');
    t.match(await store.usage(k.id), [{ status: 504, error: 'render_timeout', metered: true, operation: 'screenshot' }]);
    t.equal((await store.usage(k.id)).length, 1);
    // A 400 (as a 503) closes its lease with no usage record, and a repeat is still 204 (docs/architecture.md §6).
    const refused = await request(port, 'POST', `${EXT_AUTHZ_PREFIX}/v1/pdf`, { authorization: `Bearer ${k.secret}` });
    const refusedBody = JSON.stringify({ lease: refused.headers[LEASE_HEADER], status: 400 });
    t.equal((await request(settlePort, 'POST', SETTLE_PATH, { ...TEST_RENDERER_AUTH }, refusedBody)).status, 204, 'a 400 settles: 204');
    t.equal((await request(settlePort, 'POST', SETTLE_PATH, { ...TEST_RENDERER_AUTH }, refusedBody)).status, 204, 'again: 204');
    t.equal((await store.usage(k.id)).length, 1, 'the 400 wrote no usage');
    t.equal(await store.inFlight(k.id), 0, 'and freed its place');
    const unknown = await request(settlePort, 'POST', SETTLE_PATH, { ...TEST_RENDERER_AUTH }, JSON.stringify({ lease: signedLease('screenshot'), status: 200 }));
    t.equal(unknown.status, 404, 'a signed lease policy never granted: 404');
    for (const bad of ['', '{', '[]', JSON.stringify({ lease, status: 'ok' })]) {
      const r = await request(settlePort, 'POST', SETTLE_PATH, { ...TEST_RENDERER_AUTH }, bad);
      t.equal(r.status, 400, bad);
      t.equal(JSON.parse(r.body).success, false);
    }
    t.equal((await request(settlePort, 'POST', SETTLE_PATH, { ...TEST_RENDERER_AUTH }, 'x'.repeat(OVER_BODY_LIMIT))).status, 413);
    t.equal((await request(settlePort, 'GET', SETTLE_PATH, { ...TEST_RENDERER_AUTH })).status, 405);
  });

  t.test('settle takes only a lease policy signed: a forged one changes nothing', async (t) => {
    const { port, settlePort, key, store } = await serve(t, kind);
    const k = await key('free');
    const a = await request(port, 'POST', `${EXT_AUTHZ_PREFIX}/v1/screenshot`, { authorization: `Bearer ${k.secret}` });
    t.equal(a.status, 200);
    const granted = String(a.headers[LEASE_HEADER]);
    const claims = testLeaseKeys.verify(granted)!;
    const month = '2026-08';
    const before = { used: await store.monthUsed(k.id, month), inFlight: await store.inFlight(k.id), open: await store.openLeases(k.id) };
    const forgedRows: Array<[string, string]> = [
      ['made up', 'lease-of-nobody'],
      ['the granted id signed with another key', otherLeaseKeys().sign(claims)],
      ['the granted id, signature of another lease', `${leaseIdOf(granted)}.${claims.keyId}.${claims.operation}.${claims.expiresAt}.${signedLease('screenshot').split('.')[4]}`],
      ['the granted lease with a later expiry, signature kept', granted.replace(`.${claims.expiresAt}.`, `.${claims.expiresAt + 1}.`)],
      ['the bare lease id', leaseIdOf(granted)],
    ];
    for (const [name, lease] of forgedRows) {
      const r = await request(settlePort, 'POST', SETTLE_PATH, { ...TEST_RENDERER_AUTH }, JSON.stringify({ lease, status: 200, cache: 'miss' }));
      t.equal(r.status, 401, `${name}: 401`);
      t.same(JSON.parse(r.body), { error: 'unauthorized' }, `${name}: body`);
    }
    t.same(await store.usage(k.id), [], 'no usage written');
    t.same({ used: await store.monthUsed(k.id, month), inFlight: await store.inFlight(k.id), open: await store.openLeases(k.id) }, before,
      'the lease is still open, its place and reservation held');
    const real = await request(settlePort, 'POST', SETTLE_PATH, { ...TEST_RENDERER_AUTH }, JSON.stringify({ lease: granted, status: 200, cache: 'miss' }));
    t.equal(real.status, 204, 'the signed lease settles');
    t.match(await store.usage(k.id), [{ leaseId: leaseIdOf(granted), metered: true }]);
  });

  t.test('health: live always, ready when the store answers', async (t) => {
    const { port } = await serve(t, kind);
    const live = await request(port, 'GET', LIVE_PATH);
    t.equal(live.status, 200);
    const ready = await request(port, 'GET', READY_PATH);
    t.equal(ready.status, 200);
    const metrics = await request(port, 'GET', METRICS_PATH);
    t.equal(metrics.status, 200);
    t.match(metrics.body, /tintype_policy_checks_total/);
  });

  t.test('a store that cannot answer fails closed: 503 busy, nothing granted, nothing metered', async (t) => {
    const { port, settlePort, key, home, store } = await serve(t, kind, 300);
    const k = await key('pro');
    const auth = { authorization: `Bearer ${k.secret}` };
    const before = await request(port, 'POST', `${EXT_AUTHZ_PREFIX}/v1/pdf`, auth);
    t.equal(before.status, 200);
    const unlock = await home.lockAll();
    let r;
    try {
      r = await request(port, 'POST', `${EXT_AUTHZ_PREFIX}/v1/pdf`, auth);
      const s = await request(settlePort, 'POST', SETTLE_PATH, { ...TEST_RENDERER_AUTH }, JSON.stringify({ lease: before.headers[LEASE_HEADER], status: 200, cache: 'miss' }));
      t.equal(s.status, 503, 'a settle that cannot be written is not acknowledged');
      t.equal(JSON.parse(s.body).error, 'busy');
      const ready = await request(port, 'GET', READY_PATH);
      t.equal(ready.status, 503, 'not ready while the store cannot answer');
    } finally {
      await unlock();
    }
    t.equal(r.status, 503);
    t.equal(r.body, '{"error":"busy"}');
    t.equal(r.headers['retry-after'], '1');
    t.equal(r.headers[LEASE_HEADER], undefined, 'nothing granted');
    t.equal(await store.inFlight(k.id), 1, 'only the lease granted before');
    t.equal(await store.monthUsed(k.id, '2026-08'), 1);
    t.same(await store.usage(k.id), [], 'nothing recorded');
    const s = await request(settlePort, 'POST', SETTLE_PATH, { ...TEST_RENDERER_AUTH }, JSON.stringify({ lease: before.headers[LEASE_HEADER], status: 200, cache: 'miss' }));
    t.equal(s.status, 204, 'the retried settle lands once the store is back');
    t.equal((await store.usage(k.id)).length, 1);
  });

  t.test('a grant whose requester has gone is withdrawn: no place held, no call spent, nothing recorded', async (t) => {
    const { port, key, store, lines } = await serve(t, kind);
    const k = await key('pro');
    // A requester past its ext_authz timeout closes its connection; here the close follows the
    // request at once, so it waits unread behind it when the check runs.
    await new Promise<void>((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1', () => {
        socket.end(`POST /authz/v1/pdf HTTP/1.1\r\nhost: policy\r\nauthorization: Bearer ${k.secret}\r\ncontent-length: 0\r\n\r\n`);
      });
      socket.on('error', reject);
      socket.on('close', () => resolve());
      socket.resume();
    });
    const checked = async (): Promise<string[]> => lines.filter((l) => l.includes('"event":"check"')).map((l) => String(JSON.parse(l).outcome));
    while ((await checked()).length === 0) await new Promise((r) => setTimeout(r, 20));
    t.same(await checked(), ['withdrawn'], 'checked, then withdrawn');
    t.equal(await store.openLeases(k.id), 0, 'no lease left to expire');
    t.equal(await store.inFlight(k.id), 0, 'its render place is free');
    t.equal(await store.monthUsed(k.id, '2026-08'), 0, 'the call it reserved is given back');
    t.same(await store.usage(k.id), [], 'nothing recorded');
    const r = await request(port, 'POST', '/authz/v1/pdf', { authorization: `Bearer ${k.secret}` });
    t.equal(r.status, 200, 'a requester that waits is granted as before');
  });

  t.test('parallel HTTP checks on two replicas and many connections never pass the quota, the places or the window', async (t) => {
    const home = await storeHome(kind);
    const clock = fakeClock('2026-10-31T23:58:00Z');
    const config = loadConfig({ PORT: '0', TINTYPE_POLICY_SETTLE_PORT: '0', ...home.env });
    const logger = createLogger('policy', { sink: () => {} });
    // Two policy processes' worth of state: each replica has its own store (its own pool on PostgreSQL).
    const replicas = [0, 1].map(() => createPolicyServer({ config, logger, store: home.open(), plans: PLANS, clock: clock.now, host: '127.0.0.1' }));
    for (const r of replicas) await r.start();
    const clients = replicas.map((r) => pooledClient(r.address().port, 16));
    const settlers = replicas.map((r) => pooledClient(r.settleAddress().port, 16, TEST_RENDERER_AUTH));
    t.teardown(async () => {
      for (const c of [...clients, ...settlers]) c.close();
      for (const r of replicas) await r.stop();
      await home.drop();
    });
    const store = replicas[0]!.store;
    const key = (plan: string) => createKey(store, PLANS, { plan, now: clock.now() });
    /** `n` checks at once, alternating replicas. */
    const burst = (n: number, method: string, path: string, secret: string): Promise<Reply[]> =>
      Promise.all(Array.from({ length: n }, (_, i) => clients[i % 2]!.request(method, path, { authorization: `Bearer ${secret}` })));
    const errors = (rs: Reply[]) => rs.filter((r) => r.status !== 200).map((r) => JSON.parse(r.body).error as string);

    // Monthly quota: 7 a month, 100 calls at once grant exactly 7.
    const q = await key('seven');
    const pings = await burst(100, 'GET', `${EXT_AUTHZ_PREFIX}/v1/ping`, q.secret);
    t.equal(pings.filter((r) => r.status === 200).length, 7, '100 parallel calls, quota 7: exactly 7 granted');
    t.ok(errors(pings).every((e) => e === 'quota_exceeded'), 'the rest quota_exceeded');
    t.equal(await store.monthUsed(q.id, '2026-10'), 7);

    // Burst window: 60 a minute, 100 calls at once grant exactly 60.
    const w = await key('free');
    const window = await burst(100, 'GET', `${EXT_AUTHZ_PREFIX}/v1/ping`, w.secret);
    t.equal(window.filter((r) => r.status === 200).length, 60, '100 parallel calls, 60 a minute: exactly 60 granted');
    t.ok(errors(window).every((e) => e === 'rate_limited'));

    // Render places and quota together: rounds of 40 renders at once race the settles of the
    // round before. A round's own grants are not settled within it, so they hold places together:
    // never more than 3. Every settle is metered, so over all rounds exactly 20 are granted.
    const k = await key('three');
    let held: string[] = [];
    let total = 0;
    let maxRound = 0;
    const refusals = new Set<string>();
    for (let round = 0; round < 40 && total < 20; round++) {
      const settles = held.map((lease, i) =>
        settlers[i % 2]!.request('POST', SETTLE_PATH, {}, JSON.stringify({ lease, status: 200, cache: 'miss' })));
      const [checks, settled] = await Promise.all([burst(40, 'POST', `${EXT_AUTHZ_PREFIX}/v1/pdf`, k.secret), Promise.all(settles)]);
      t.ok(settled.every((r) => r.status === 204), `round ${round}: settles acknowledged`);
      held = checks.filter((r) => r.status === 200).map((r) => String(r.headers[LEASE_HEADER]));
      for (const e of errors(checks)) refusals.add(e);
      maxRound = Math.max(maxRound, held.length);
      t.equal(await store.inFlight(k.id), held.length, `round ${round}: the store holds exactly the round's grants`);
      total += held.length;
    }
    t.ok(maxRound <= 3 && maxRound > 0, `at most 3 renders granted at once (${maxRound})`);
    t.equal(total, 20, 'exactly the monthly quota granted over all rounds');
    t.same([...refusals].filter((e) => e !== 'concurrent_limit' && e !== 'quota_exceeded'), [], 'refusals are concurrent_limit or quota_exceeded');
    for (const [i, lease] of held.entries()) {
      t.equal((await settlers[i % 2]!.request('POST', SETTLE_PATH, {}, JSON.stringify({ lease, status: 200 }))).status, 204);
    }
    const spent = await burst(40, 'POST', `${EXT_AUTHZ_PREFIX}/v1/pdf`, k.secret);
    t.ok(errors(spent).length === 40 && errors(spent).every((e) => e === 'quota_exceeded'), 'then only quota_exceeded');
    const ledger = await store.usage(k.id);
    t.equal(ledger.filter((u) => u.metered).length, 20, 'the ledger holds the 20');
    t.equal(await store.monthUsed(k.id, '2026-10'), 20);
    t.equal(await store.inFlight(k.id), 0);
  });
}
