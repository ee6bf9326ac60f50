/**
 * The real `bin/tintype policy` and `bin/tintype keys` processes on a real store: kill -9 under
 * a load of checks and settles, restart, and the ledger holds every acknowledged settle with
 * monthly counts equal to it (a crash loses nothing); unsettled leases expire in the real process;
 * the four 401s are byte-identical and no line the process writes holds a secret (spec Part 5).
 * Run once per backend by process.sqlite.test.ts, process.postgres.test.ts and process.redis.test.ts.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Test } from 'tap';
import { createKey } from '../../policy/keys.ts';
import { parsePlans } from '../../policy/plans.ts';
import type { PolicyStore, UsageRecord } from '../../policy/store/store.ts';
import { type Reply, pooledClient, request } from './http.ts';
import { type PolicyProcess, runTintype, startPolicyProcess } from './process.ts';
import { type StoreKind, storeHome } from './stores.ts';
import { TEST_RENDERER_AUTH, leaseIdOf } from '../lib/leases.ts';
import { EXT_AUTHZ_PREFIX, LEASE_HEADER, SETTLE_PATH } from '../../lib/policy-contract.ts';
import { METRICS_PATH } from '../../lib/admin.ts';

const PLANS_DOC = {
  plans: {
    // Limits out of the way: the crash test is about the ledger, not refusals.
    load: { monthlyQuota: 1_000_000, perMinute: 1_000_000, concurrentRenders: 1_000 },
    one: { monthlyQuota: 1_000, perMinute: 1_000, concurrentRenders: 1 },
    few: { monthlyQuota: 5, perMinute: 1_000, concurrentRenders: 3 },
  },
};
const PLANS = parsePlans(JSON.stringify(PLANS_DOC));
/** Lease lifetime in these processes: render budget 3 s + no grace. */
const TTL_MS = 3_000;

type Outcome = { status: number; error?: string; cache?: 'hit' | 'miss' };
/** An outcome and its usage record's metered flag, or undefined when it writes no usage (400, 503: docs/architecture.md §6). */
type Expected = [Outcome, boolean | undefined];
const OUTCOMES: ReadonlyArray<Expected> = [
  [{ status: 200, cache: 'miss' }, true],
  [{ status: 200, cache: 'hit' }, true],
  [{ status: 502, error: 'render_failed' }, true],
  [{ status: 504, error: 'render_timeout' }, true],
  [{ status: 400 }, undefined],
  [{ status: 422, error: 'url_rejected' }, false],
  [{ status: 503, error: 'busy' }, undefined],
];
const OPERATIONS: ReadonlyArray<[string, string]> = [
  ['GET', `${EXT_AUTHZ_PREFIX}/v1/ping`],
  ['POST', `${EXT_AUTHZ_PREFIX}/v1/screenshot`],
  ['POST', `${EXT_AUTHZ_PREFIX}/v1/pdf`],
  ['GET', `${EXT_AUTHZ_PREFIX}/v1/og?template=title&title=crash`],
  ['POST', `${EXT_AUTHZ_PREFIX}/v1/html-to-image`],
];
const WORKERS = 8;
const KILL_AFTER_ACKS = 300;

async function setup(t: Test, kind: StoreKind) {
  const home = await storeHome(kind);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tintype-policy-proc-'));
  const plansFile = path.join(dir, 'plans.json');
  writeFileSync(plansFile, JSON.stringify(PLANS_DOC));
  const env = { ...home.env, TINTYPE_PLANS: plansFile, TINTYPE_RENDER_TIMEOUT_MS: String(TTL_MS), TINTYPE_LEASE_GRACE_MS: '0' };
  const procs: PolicyProcess[] = [];
  let store: PolicyStore | undefined;
  t.teardown(async () => {
    for (const p of procs) await p.kill('SIGKILL');
    await store?.close();
    await home.drop();
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    home,
    dir,
    env,
    /** Starts a policy process that the teardown kills if the test does not. */
    async start() {
      const p = await startPolicyProcess(env);
      procs.push(p);
      return p;
    },
    /** The test's own view of the store, opened once migrations have run. */
    store() {
      store ??= home.open();
      return store;
    },
  };
}

/** Creates a key with the real command; answers its id and secret. */
async function keysCreate(t: Test, env: Record<string, string>, plan: string) {
  const r = await runTintype(['keys', 'create', '--plan', plan, '--name', 'test key'], env);
  t.equal(r.code, 0, `keys create --plan ${plan}`);
  const id = /^id: (key_\S+)$/m.exec(r.stdout)?.[1];
  const secret = /^secret: (sk_[A-Za-z0-9_-]{43})$/m.exec(r.stdout)?.[1];
  if (id === undefined || secret === undefined) throw new Error(`keys create printed no id and secret:\n${r.stdout}${r.stderr}`);
  return { id, secret, stderr: r.stderr };
}

/** Polls `probe` until it holds; fails the test (not by timing: by never holding) after `boundMs`. */
async function until(probe: () => Promise<boolean>, boundMs: number): Promise<boolean> {
  const end = Date.now() + boundMs;
  while (Date.now() < end) {
    if (await probe()) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return probe();
}

export function processSuite(t: Test, kind: StoreKind): void {
  t.test('kill -9 under load: acknowledged settles survive, months match the ledger, leases expire', async (t) => {
    const s = await setup(t, kind);
    const key = await keysCreate(t, s.env, 'load');
    const auth = { authorization: `Bearer ${key.secret}` };

    const granted = new Set<string>(); // leases the client saw granted
    const acked = new Map<string, Expected>(); // settles answered 204
    const abandoned = new Set<string>(); // granted and deliberately never settled
    const cutOff = new Map<string, Expected>(); // settle sent, no answer: the process died
    const unexpected: string[] = [];
    let cutMidRequest = 0;
    let n = 0;

    const first = await s.start();
    const client = pooledClient(first.port, WORKERS);
    const settler = pooledClient(first.settlePort, WORKERS, TEST_RENDERER_AUTH);
    const worker = async (w: number): Promise<void> => {
      for (let i = 0; ; i++) {
        const [method, p] = OPERATIONS[(w + i) % OPERATIONS.length]!;
        let check: Reply;
        try {
          check = await client.request(method, p, auth);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'ECONNREFUSED') cutMidRequest++;
          return;
        }
        if (check.status !== 200) {
          unexpected.push(`check ${check.status} ${check.body}`);
          return;
        }
        const lease = String(check.headers[LEASE_HEADER]);
        granted.add(lease);
        const k = n++;
        if (k % 10 === 9) {
          abandoned.add(lease); // a renderer that died before settling
          continue;
        }
        const outcome = OUTCOMES[k % OUTCOMES.length]!;
        try {
          const r = await settler.request('POST', SETTLE_PATH, { 'content-type': 'application/json' }, JSON.stringify({ lease, ...outcome[0] }));
          if (r.status === 204) acked.set(lease, outcome);
          else unexpected.push(`settle ${r.status} ${r.body}`);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'ECONNREFUSED') cutMidRequest++;
          cutOff.set(lease, outcome);
          return;
        }
      }
    };
    const load = Promise.all(Array.from({ length: WORKERS }, (_, w) => worker(w)));
    const reached = await until(async () => acked.size >= KILL_AFTER_ACKS || unexpected.length > 0, 60_000);
    await first.kill('SIGKILL');
    await load;
    client.close();
    settler.close();
    t.ok(reached, `${KILL_AFTER_ACKS} settles acknowledged before the kill`);
    t.same(unexpected, [], 'every check granted and every settle acknowledged while the process lived');
    t.ok(cutMidRequest > 0, `the kill cut requests in flight (${cutMidRequest})`);
    t.equal(first.output().includes('"event":"stopped"'), false, 'the process did not stop cleanly: it was killed');

    // Restart on the same store; a renderer retries the settles the dead process never answered.
    const second = await s.start();
    const retried = new Map<string, { outcome: Expected; answeredAt: number }>();
    for (const [lease, outcome] of cutOff) {
      const r = await request(second.settlePort, 'POST', SETTLE_PATH, { ...TEST_RENDERER_AUTH }, JSON.stringify({ lease, ...outcome[0] }));
      // A check the dead process granted is a lease in the store: never unknown (404) after restart.
      t.equal(r.status, 204, 'a retried settle is acknowledged after the restart');
      retried.set(lease, { outcome, answeredAt: Date.now() });
    }
    const after = pooledClient(second.port, 4);
    const afterSettler = pooledClient(second.settlePort, 4, TEST_RENDERER_AUTH);
    for (let i = 0; i < 40; i++) {
      const [method, p] = OPERATIONS[i % OPERATIONS.length]!;
      const c = await after.request(method, p, auth);
      t.equal(c.status, 200, 'the restarted process grants');
      const lease = String(c.headers[LEASE_HEADER]);
      granted.add(lease);
      const outcome = OUTCOMES[i % OUTCOMES.length]!;
      const r = await afterSettler.request('POST', SETTLE_PATH, {}, JSON.stringify({ lease, ...outcome[0] }));
      t.equal(r.status, 204);
      acked.set(lease, outcome);
    }
    after.close();
    afterSettler.close();

    // Leases nobody settles (abandoned, or granted just before the kill with the answer lost)
    // are expired by the restarted process's own sweep.
    const store = s.store();
    t.ok(await until(async () => (await store.openLeases(key.id)) === 0, 30_000), 'every open lease expired');

    const ledger = await store.usage(key.id);
    // The ledger knows a lease by its id; the renderer settles it with the signed lease.
    const byLease = new Map<string, UsageRecord>(ledger.map((u) => [u.leaseId, u]));
    const grantedIds = new Set([...granted].map(leaseIdOf));
    t.equal(byLease.size, ledger.length, 'one usage record per lease: nothing counted twice');
    let missing = 0;
    let wrong = 0;
    let unrecorded = 0;
    let recordedAnyway = 0;
    for (const [lease, [outcome, metered]] of acked) {
      const u = byLease.get(leaseIdOf(lease));
      if (metered === undefined) {
        unrecorded++;
        if (u !== undefined) recordedAnyway++;
      } else if (u === undefined) missing++;
      else if (u.outcome !== 'settled' || u.status !== outcome.status || u.error !== (outcome.error ?? null) ||
        u.cache !== (outcome.cache ?? null) || u.metered !== metered) wrong++;
    }
    t.equal(missing, 0, `every acknowledged settle of a metered or 422 outcome (${acked.size - unrecorded}) is in the ledger`);
    t.equal(wrong, 0, 'each with the outcome that was acknowledged');
    t.ok(unrecorded > 0, 'the load settled 400s and 503s');
    t.equal(recordedAnyway, 0, `no acknowledged 400 or 503 (${unrecorded}) wrote usage`);
    for (const [lease, { outcome: [outcome, metered], answeredAt }] of retried) {
      const u = byLease.get(leaseIdOf(lease));
      if (u?.outcome === 'settled') t.match(u, { status: outcome.status, metered }, 'a retried settle landed');
      else if (u === undefined) t.equal(metered, undefined, 'a retried 400 or 503 closed its lease with no usage');
      else t.ok(u.recordedAt <= answeredAt, 'or the lease had expired before the retry was answered');
    }
    t.ok([...abandoned].every((l) => byLease.get(leaseIdOf(l))?.outcome === 'unsettled'), `abandoned leases (${abandoned.size}) are recorded unsettled`);
    const closedUnrecorded = (l: string): boolean => (acked.get(l) ?? retried.get(l)?.outcome)?.[1] === undefined &&
      (acked.has(l) || retried.has(l));
    t.ok([...granted].every((l) => byLease.has(leaseIdOf(l)) || closedUnrecorded(l)),
      `every granted lease (${granted.size}) has its record, but those closed by a 400 or a 503`);
    t.ok(ledger.every((u) => grantedIds.has(u.leaseId) || u.outcome === 'unsettled'),
      'the ledger holds only leases a client saw, or ones granted as the process died and expired since');
    // A repeated settle of an acknowledged 400 or 503 is still idempotent after the restart.
    const again = [...acked].filter(([, [, metered]]) => metered === undefined).slice(0, 5);
    for (const [lease, [outcome]] of again) {
      const r = await request(second.settlePort, 'POST', SETTLE_PATH, { ...TEST_RENDERER_AUTH }, JSON.stringify({ lease, ...outcome }));
      t.equal(r.status, 204, `a repeated settle of an acknowledged ${outcome.status} answers 204`);
    }
    t.equal((await store.usage(key.id)).length, ledger.length, 'and writes nothing');
    const unsettled = ledger.filter((u) => u.outcome === 'unsettled');
    t.ok(unsettled.every((u) => !u.metered && u.status === null), 'unsettled leases are not metered');
    t.ok(unsettled.every((u) => u.recordedAt >= u.checkedAt + TTL_MS), 'no lease expired before budget + grace');

    const months = new Map<string, number>();
    for (const u of ledger) if (u.metered) months.set(u.month, (months.get(u.month) ?? 0) + 1);
    t.ok(months.size > 0);
    for (const [month, count] of months) t.equal(await store.monthUsed(key.id, month), count, `${month}: the count equals the ledger`);
    t.equal(await store.inFlight(key.id), 0, 'every render place is free');

    for (const out of [first.output(), second.output()]) {
      t.notOk(out.includes(key.secret.slice(3)), 'no line of the process holds the secret');
    }
  });

  t.test('two policy processes on one store: parallel checks across both never pass the quota or the places', async (t) => {
    const s = await setup(t, kind);
    const procs = [await s.start(), await s.start()];
    const clients = procs.map((p) => pooledClient(p.port, 16));
    const settlers = procs.map((p) => pooledClient(p.settlePort, 16, TEST_RENDERER_AUTH));
    t.teardown(() => [...clients, ...settlers].forEach((c) => c.close()));
    const store = s.store();
    const burst = async (secret: string, method: string, p: string, n: number): Promise<Reply[]> =>
      Promise.all(Array.from({ length: n }, (_, i) => clients[i % 2]!.request(method, p, { authorization: `Bearer ${secret}` })));
    const granted = (rs: Reply[]) => rs.filter((r) => r.status === 200);
    const refusedWith = (rs: Reply[]) => [...new Set(rs.filter((r) => r.status !== 200).map((r) => `${r.status} ${JSON.parse(r.body).error}`))];

    const places = await createKey(store, PLANS, { plan: 'few' }); // 3 renders at once, 5 a month
    const renders = await burst(places.secret, 'POST', `${EXT_AUTHZ_PREFIX}/v1/screenshot`, 60);
    t.equal(granted(renders).length, 3, '60 renders at once through two processes: exactly 3 granted');
    t.same(refusedWith(renders), ['429 concurrent_limit']);
    t.equal(await store.inFlight(places.id), 3);
    for (const [i, r] of granted(renders).entries()) {
      const settled = await settlers[i % 2]!.request('POST', SETTLE_PATH, {}, JSON.stringify({ lease: r.headers[LEASE_HEADER], status: 200, cache: 'miss' }));
      t.equal(settled.status, 204);
    }
    const rest = await burst(places.secret, 'POST', `${EXT_AUTHZ_PREFIX}/v1/pdf`, 60);
    t.equal(granted(rest).length, 2, 'with 3 of 5 spent, 60 more at once: exactly the 2 left');
    t.same(refusedWith(rest), ['429 quota_exceeded'], 'the rest find the month spent (places were never short)');
    const month = (await store.usage(places.id))[0]!.month;
    t.equal(await store.monthUsed(places.id, month), 5, 'the month holds 3 metered and 2 reserved');

    const quota = await createKey(store, PLANS, { plan: 'few' });
    const pings = await burst(quota.secret, 'GET', `${EXT_AUTHZ_PREFIX}/v1/ping`, 100);
    t.equal(granted(pings).length, 5, '100 calls at once, 5 a month: exactly 5 granted');
    t.same(refusedWith(pings), ['429 quota_exceeded']);
  });

  t.test('an unsettled lease expires in the running process: place freed, recorded unsettled, not metered', async (t) => {
    const s = await setup(t, kind);
    const proc = await s.start();
    const store = s.store();
    const k = await createKey(store, PLANS, { plan: 'one' }); // one render at a time
    const auth = { authorization: `Bearer ${k.secret}` };
    const held = await request(proc.port, 'POST', `${EXT_AUTHZ_PREFIX}/v1/screenshot`, auth);
    t.equal(held.status, 200);
    const refused = await request(proc.port, 'POST', `${EXT_AUTHZ_PREFIX}/v1/pdf`, auth);
    t.equal(refused.status, 429);
    t.same(JSON.parse(refused.body), { error: 'concurrent_limit', limit: 1 });
    t.ok(await until(async () => (await store.openLeases(k.id)) === 0, 30_000), 'the lease expired');
    t.equal(await store.inFlight(k.id), 0, 'its place is free');
    const month = (await store.usage(k.id))[0]?.month ?? '';
    t.equal(await store.monthUsed(k.id, month), 0, 'its reservation is returned');
    t.match(await store.usage(k.id), [{ leaseId: leaseIdOf(String(held.headers[LEASE_HEADER])), outcome: 'unsettled', metered: false, status: null }]);
    const late = await request(proc.settlePort, 'POST', SETTLE_PATH, { ...TEST_RENDERER_AUTH }, JSON.stringify({ lease: held.headers[LEASE_HEADER], status: 200, cache: 'miss' }));
    t.equal(late.status, 204, 'a late settle is acknowledged (idempotent)');
    t.equal((await store.usage(k.id)).length, 1, 'and changes nothing');
    t.equal(await store.monthUsed(k.id, month), 0);
    t.equal((await request(proc.port, 'POST', `${EXT_AUTHZ_PREFIX}/v1/pdf`, auth)).status, 200, 'the freed place is granted again');
    const metrics = await request(proc.port, 'GET', METRICS_PATH);
    t.match(metrics.body, /tintype_policy_lease_expiries_total 1\b/);
  });

  t.test('keys command and the real process: revocation from the next request, identical 401s, no secret in any line', async (t) => {
    const s = await setup(t, kind);
    const live = await keysCreate(t, s.env, 'one');
    const doomed = await keysCreate(t, s.env, 'one');
    const proc = await s.start();
    const ok = await request(proc.port, 'GET', `${EXT_AUTHZ_PREFIX}/v1/ping`, { authorization: `Bearer ${doomed.secret}` });
    t.equal(ok.status, 200, 'the key works before revocation', { output: proc.output() });

    const revoke = await runTintype(['keys', 'revoke', doomed.id], s.env);
    t.equal(revoke.code, 0);
    t.equal(revoke.stdout, `revoked ${doomed.id}\n`);
    const list = await runTintype(['keys', 'list'], s.env);
    t.equal(list.code, 0);
    const rows = list.stdout.trim().split('\n').map((l) => l.split('\t'));
    t.same(rows[0], ['id', 'name', 'plan', 'created', 'revoked', 'metered', 'remaining', 'egress']);
    t.match(rows.find((r) => r[0] === live.id), [live.id, 'test key', 'one', /^\d{4}-\d\d-\d\dT/, '-', /^\d+$/, /^\d+$/, '-']);
    t.match(rows.find((r) => r[0] === doomed.id), [doomed.id, 'test key', 'one', /^\d{4}-\d\d-\d\dT/, /^\d{4}-\d\d-\d\dT/]);

    const secret = live.secret;
    const cases: Array<[string, string, string, Record<string, string>]> = [
      ['missing', 'GET', `${EXT_AUTHZ_PREFIX}/v1/ping`, {}],
      ['malformed: not bearer', 'GET', `${EXT_AUTHZ_PREFIX}/v1/ping`, { authorization: `Basic ${Buffer.from(`u:${secret}`).toString('base64')}` }],
      ['malformed: trailing byte', 'GET', `${EXT_AUTHZ_PREFIX}/v1/ping`, { authorization: `Bearer ${secret}!` }],
      ['malformed: no prefix', 'GET', `${EXT_AUTHZ_PREFIX}/v1/ping`, { authorization: `Bearer ${secret.slice(3)}` }],
      ['malformed: token', 'POST', `${EXT_AUTHZ_PREFIX}/v1/pdf`, { authorization: secret }],
      ['unknown', 'GET', `${EXT_AUTHZ_PREFIX}/v1/ping`, { authorization: `Bearer sk_${'Z'.repeat(43)}` }],
      ['revoked, the next request', 'GET', `${EXT_AUTHZ_PREFIX}/v1/ping`, { authorization: `Bearer ${doomed.secret}` }],
      ['revoked render', 'POST', `${EXT_AUTHZ_PREFIX}/v1/screenshot`, { authorization: `Bearer ${doomed.secret}` }],
      ['query api_key', 'GET', `${EXT_AUTHZ_PREFIX}/v1/og?template=title&title=a&api_key=${secret}`, {}],
      ['query key', 'GET', `${EXT_AUTHZ_PREFIX}/v1/ping?key=${secret}`, {}],
      ['query authorization', 'GET', `${EXT_AUTHZ_PREFIX}/v1/ping?authorization=Bearer%20${secret}`, {}],
      ['query access_token', 'POST', `${EXT_AUTHZ_PREFIX}/v1/screenshot?access_token=${secret}`, {}],
    ];
    const replies: Reply[] = [];
    for (const [name, method, p, headers] of cases) {
      const r = await request(proc.port, method, p, headers);
      t.equal(r.status, 401, name);
      replies.push(r);
    }
    const want = replies[0]!;
    t.equal(want.body, '{"error":"unauthorized"}');
    t.same(want.stableHeaders, ['content-type: application/json; charset=utf-8', 'www-authenticate: Bearer', 'content-length: 24']);
    replies.forEach((r, i) => {
      t.same(r.stableHeaders, want.stableHeaders, `${cases[i]![0]}: the same header lines`);
      t.equal(r.body, want.body, `${cases[i]![0]}: the same body bytes`);
    });
    t.equal((await request(proc.port, 'GET', `${EXT_AUTHZ_PREFIX}/v1/ping`, { authorization: `Bearer ${secret}` })).status, 200, 'the live key still works', { output: proc.output() });

    await proc.kill('SIGTERM');
    t.match(proc.output(), /"event":"stopped"/, 'SIGTERM stops it cleanly');
    const everything = [proc.output(), live.stderr, doomed.stderr, revoke.stdout, revoke.stderr, list.stdout, list.stderr].join('\n');
    t.match(everything, /"event":"check"/, 'debug logging was on: every check logged');
    for (const sec of [live.secret, doomed.secret]) {
      t.notOk(everything.includes(sec.slice(3)), 'no line of policy or keys (but create\'s stdout) holds a secret');
    }
  });

  t.test('a bad plans file stops start-up with a message naming the field', async (t) => {
    const s = await setup(t, kind);
    writeFileSync(path.join(s.dir, 'bad.json'), JSON.stringify({ plans: { pro: { monthlyQuota: 10, perMinute: -1, concurrentRenders: 1 } } }));
    await t.rejects(startPolicyProcess({ ...s.env, TINTYPE_PLANS: path.join(s.dir, 'bad.json') }), /plans\.pro\.perMinute/);
  });
}
