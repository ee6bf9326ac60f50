/**
 * Single-use leases (docs/architecture.md §4), with the real policy on each store, real renderer
 * servers claiming and settling over HTTP on policy's renderer listener, and real sockets; only
 * the Chromium pool is a stand-in that counts its renders. One lease taken from policy's
 * `/authz` is sent straight to the renderers' ports again and again, one after another and at
 * once, on one renderer and on two: it renders once, is metered once, and every other attempt is
 * refused before any work (401 once spent, 503 `busy` while another attempt holds it).
 */
import type { Test } from 'tap';
import { loadConfig } from '../../lib/config.ts';
import { createLogger } from '../../lib/log.ts';
import { Registry } from '../../lib/metrics.ts';
import { ATTEMPT_HEADER, CLAIM_PATH, CLAIM_STATUS, EXT_AUTHZ_PREFIX, LEASE_HEADER, RELEASE_PATH, agentSettler } from '../../lib/policy-contract.ts';
import { createKey } from '../../policy/keys.ts';
import { createPolicyServer, type PolicyServer } from '../../policy/server.ts';
import type { RenderCache } from '../../renderer/cache/cache.ts';
import { ALONE } from '../../renderer/cache/flight.ts';
import { createRendererServer, type RendererServer } from '../../renderer/server/index.ts';
import { leaseIdOf, signedLease, TEST_LEASE_ENV, TEST_RENDERER_AUTH, TEST_RENDERER_TOKEN } from '../lib/leases.ts';
import { standInPool, type StandInPool } from '../renderer/stand-in-pool.ts';
import { request } from './http.ts';
import { type StoreKind, storeHome } from './stores.ts';

const PLANS = { single: { monthlyQuota: 1_000, perMinute: 1_000, concurrentRenders: 1 } };
const quiet = createLogger('single-use-test', { level: 'error' });

/** A cache that never hits, so every attempt that gets past its lease would render. */
const noCache = { get: async () => undefined, set: async () => {}, flight: async () => ALONE } as unknown as RenderCache;

interface Rig {
  policy: PolicyServer;
  renderers: { server: RendererServer; pool: StandInPool; port: number }[];
  secret: string;
  keyId: string;
  /** Renders done by every renderer together. */
  renders(): number;
}

async function rig(t: Test, kind: StoreKind, renderers: number): Promise<Rig> {
  const home = await storeHome(kind);
  const config = loadConfig({ PORT: '0', TINTYPE_ADMIN_PORT: '0', TINTYPE_LOG_LEVEL: 'error', ...home.env });
  const policy = createPolicyServer({ config, logger: quiet, store: home.open(), plans: PLANS, host: '127.0.0.1' });
  await policy.start();
  const settler = agentSettler(`http://127.0.0.1:${policy.settleAddress().port}`, { token: TEST_RENDERER_TOKEN });
  const out: Rig['renderers'] = [];
  for (let i = 0; i < renderers; i++) {
    const pool = standInPool(300);
    const server = createRendererServer({
      config, logger: quiet, registry: new Registry(), pool, cache: noCache, settler, judge: async () => ({ ok: true }), host: '127.0.0.1',
    });
    await server.start();
    out.push({ server, pool, port: server.address().port });
  }
  const key = await createKey(policy.store, PLANS, { plan: 'single', now: Date.now() });
  t.teardown(async () => {
    for (const r of out) await r.server.stop();
    settler.close();
    await policy.stop();
    await home.drop();
  });
  return { policy, renderers: out, secret: key.secret, keyId: key.id, renders: () => out.reduce((n, r) => n + r.pool.renders, 0) };
}

/** A lease for html-to-image, taken from policy's /authz as the edge takes it. */
async function takeLease(r: Rig): Promise<string> {
  const a = await request(r.policy.address().port, 'POST', `${EXT_AUTHZ_PREFIX}/v1/html-to-image`, { authorization: `Bearer ${r.secret}` });
  if (a.status !== 200) throw new Error(`authz answered ${a.status} ${a.body}`);
  return String(a.headers[LEASE_HEADER]);
}

/** Sends the lease straight to a renderer's port; resolves with status and error code. */
async function send(port: number, lease: string, attempt?: string): Promise<string> {
  const headers: Record<string, string> = { 'content-type': 'application/json', [LEASE_HEADER]: lease };
  if (attempt !== undefined) headers[ATTEMPT_HEADER] = attempt;
  const a = await request(port, 'POST', '/v1/html-to-image', headers, JSON.stringify({ html: '<p>replayed</p>', width: 8, height: 8 }));
  return a.status === 200 ? '200' : `${a.status} ${JSON.parse(a.body).error}`;
}

/** The key's ledger once every lease is closed: metered records, places held, leases open. */
async function ledger(r: Rig): Promise<{ metered: number; records: number; inFlight: number; open: number }> {
  const usage = await r.policy.store.usage(r.keyId);
  return {
    metered: usage.filter((u) => u.metered).length,
    records: usage.length,
    inFlight: await r.policy.store.inFlight(r.keyId),
    open: await r.policy.store.openLeases(r.keyId),
  };
}

const SETTLED_ONCE = { metered: 1, records: 1, inFlight: 0, open: 0 };

export function singleUseSuite(t: Test, kind: StoreKind): void {
  t.test('one lease replayed 3 times in a row on one renderer renders once, metered once', async (t) => {
    const r = await rig(t, kind, 1);
    const lease = await takeLease(r);
    const port = r.renderers[0]!.port;
    const answers = [await send(port, lease), await send(port, lease), await send(port, lease)];
    t.same(answers, ['200', '401 unauthorized', '401 unauthorized'], 'the first renders; the spent lease is refused');
    t.equal(r.renders(), 1, 'rendered once');
    t.same(await ledger(r), SETTLED_ONCE);
  });

  t.test('one lease replayed 3 times in a row across two renderers renders once', async (t) => {
    const r = await rig(t, kind, 2);
    const lease = await takeLease(r);
    const [a, b] = r.renderers.map((x) => x.port) as [number, number];
    const answers = [await send(a, lease), await send(b, lease), await send(a, lease)];
    t.same(answers, ['200', '401 unauthorized', '401 unauthorized']);
    t.equal(r.renders(), 1, 'rendered once');
    t.same(await ledger(r), SETTLED_ONCE);
  });

  for (const renderers of [1, 2]) {
    t.test(`one lease sent twice at once ${renderers === 1 ? 'to one renderer' : 'to two renderers'} renders once`, async (t) => {
      const r = await rig(t, kind, renderers);
      const lease = await takeLease(r);
      const ports = [r.renderers[0]!.port, r.renderers[renderers - 1]!.port];
      const answers = (await Promise.all(ports.map((p) => send(p, lease)))).sort();
      t.same(answers, ['200', '503 busy'], 'one renders; the other finds it held and does nothing');
      t.equal(r.renders(), 1, 'rendered once');
      t.same(await ledger(r), SETTLED_ONCE, 'the attempt refused settles nothing: one metered record');
      t.same(await send(ports[1]!, lease), '401 unauthorized', 'and once settled it is spent');
    });
  }

  t.test('the edge\'s retry still works: a 503 busy before a slot gives the claim back, the retry renders, then it is spent', async (t) => {
    const r = await rig(t, kind, 2);
    const lease = await takeLease(r);
    const [a, b] = r.renderers as [Rig['renderers'][0], Rig['renderers'][0]];
    a.pool.busy = true;
    t.equal(await send(a.port, lease, '1'), '503 busy', 'attempt 1: no slot');
    t.equal(await r.policy.store.openLeases(r.keyId), 1, 'the lease is still open');
    t.equal(await send(b.port, lease, '2'), '200', 'attempt 2 on the other renderer renders');
    t.equal(await send(b.port, lease, '2'), '401 unauthorized', 'a third attempt finds it spent');
    t.equal(await send(a.port, lease, '1'), '401 unauthorized', 'whatever attempt it claims to be');
    t.equal(r.renders(), 1);
    t.same(await ledger(r), SETTLED_ONCE);
  });

  t.test('policy unreachable at claim time: 503 busy, nothing rendered, nothing metered, the lease left for the retry', async (t) => {
    const r = await rig(t, kind, 1);
    const lease = await takeLease(r);
    const unreachable = agentSettler('http://127.0.0.1:1');
    t.teardown(() => unreachable.close());
    const pool = standInPool(300);
    const cut = createRendererServer({
      config: loadConfig({ PORT: '0', TINTYPE_ADMIN_PORT: '0', TINTYPE_LOG_LEVEL: 'error', TINTYPE_LEASE_PUBLIC_KEYS: TEST_LEASE_ENV.TINTYPE_LEASE_PUBLIC_KEYS }),
      logger: quiet, registry: new Registry(), pool, cache: noCache, settler: unreachable, judge: async () => ({ ok: true }), host: '127.0.0.1',
    });
    await cut.start();
    t.teardown(() => cut.stop());
    t.equal(await send(cut.address().port, lease, '1'), '503 busy', 'no claim, no work');
    t.equal(pool.renders, 0, 'nothing rendered');
    t.same((await ledger(r)).records, 0, 'nothing recorded');
    t.equal(await send(r.renderers[0]!.port, lease, '2'), '200', 'the edge\'s retry on a renderer that reaches policy renders it');
    t.same(await ledger(r), SETTLED_ONCE);
  });

  t.test('a claim matches the lease by id, key and operation: a signed lease that names the id with another key or operation takes nothing', async (t) => {
    const r = await rig(t, kind, 0);
    const lease = await takeLease(r);
    const id = leaseIdOf(lease);
    const claimAt = (path: string, token: string) => request(r.policy.settleAddress().port, 'POST', path, { ...TEST_RENDERER_AUTH, 'content-type': 'application/json' }, JSON.stringify({ lease: token })).then((a) => a.status);
    // Signed with policy's own key, as a stolen signing key or a bug in the signer would sign them.
    const otherOperation = signedLease('pdf', { id, keyId: r.keyId });
    const otherKey = signedLease('html-to-image', { id, keyId: 'key_someone_else' });
    t.equal(await claimAt(CLAIM_PATH, otherOperation), CLAIM_STATUS.spent, 'another operation under the id: never granted');
    t.equal(await claimAt(CLAIM_PATH, otherKey), CLAIM_STATUS.spent, 'another key under the id: never granted');
    t.equal(await claimAt(CLAIM_PATH, lease), CLAIM_STATUS.claimed, 'the lease as granted is still open and claims');
    await claimAt(RELEASE_PATH, otherOperation);
    await claimAt(RELEASE_PATH, otherKey);
    t.equal(await claimAt(CLAIM_PATH, lease), CLAIM_STATUS.held, 'a mismatched release gave nothing back: still held');
    t.equal(r.renders(), 0);
  });

}
