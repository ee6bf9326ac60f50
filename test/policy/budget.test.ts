/**
 * The store's budget fits inside the edge's ext_authz timeout (docs/operations.md "Stores"; the Envoy config the chart renders):
 * a check whose store is locked fails closed before Envoy gives up on it, and no reservation
 * commits after that. Otherwise a grant nobody received would hold the key's render place,
 * unsettled, until its lease expired.
 */
import t from 'tap';
import { createPolicy } from '../../policy/authorize.ts';
import { createKey } from '../../policy/keys.ts';
import { BUILT_IN_PLANS } from '../../policy/plans.ts';
import { PG_TIMEOUTS } from '../../policy/store/postgres.ts';
import { STORE_BUDGET_MS } from '../../policy/store/store.ts';
import { type StoreKind, fakeClock, storeHome } from './stores.ts';
import { renderedEnvoy } from '../envoy/rendered.ts';

/** The ext_authz http_service timeout of the Envoy bootstrap the chart renders, in ms. */
async function extAuthzTimeoutMs(): Promise<number> {
  const { doc } = await renderedEnvoy('default-values.yaml');
  const found: string[] = [];
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (typeof v === 'object' && v !== null) {
      const o = v as Record<string, unknown>;
      if (o.name === 'envoy.filters.http.ext_authz') {
        const timeout = ((o.typed_config as any)?.http_service?.server_uri?.timeout) as string | undefined;
        if (timeout !== undefined) found.push(timeout);
      }
      Object.values(o).forEach(walk);
    }
  };
  walk(doc);
  if (found.length !== 1 || !/^\d+(\.\d+)?s$/.test(found[0]!)) throw new Error(`ext_authz timeout not found: ${found.join(', ')}`);
  return Number(found[0]!.slice(0, -1)) * 1000;
}

const EDGE_MS = await extAuthzTimeoutMs();

t.test('the budget and its PostgreSQL split fit inside the ext_authz timeout', async (t) => {
  t.ok(STORE_BUDGET_MS < EDGE_MS, `store budget ${STORE_BUDGET_MS} ms < ext_authz ${EDGE_MS} ms`);
  t.ok(PG_TIMEOUTS.acquireMs + PG_TIMEOUTS.statementMs <= STORE_BUDGET_MS, 'acquire + statement within the budget');
  t.ok(PG_TIMEOUTS.queryMs > PG_TIMEOUTS.statementMs, 'the server aborts a slow statement before the client stops waiting');
  t.ok(PG_TIMEOUTS.acquireMs + PG_TIMEOUTS.queryMs < EDGE_MS, 'and the client answers before the edge gives up');
});

for (const kind of ['sqlite', 'postgres'] as StoreKind[]) {
  t.test(`${kind}: a check on a locked store fails closed, and nothing is granted when the lock goes at the edge's timeout`, async (t) => {
    const home = await storeHome(kind);
    const store = home.open(); // the default budget, as `tintype policy` opens it
    t.teardown(async () => {
      await store.close();
      await home.drop();
    });
    await store.migrate();
    const clock = fakeClock('2026-09-01T10:00:00Z');
    const k = await createKey(store, BUILT_IN_PLANS, { plan: 'free', now: clock.now() });
    const policy = createPolicy({ store, plans: BUILT_IN_PLANS, clock: clock.now, leaseTtlMs: 45_000 });
    const unlock = await home.lockAll();
    // The lock goes when Envoy would have answered the client 503 on its own.
    const released = new Promise<void>((resolve) => setTimeout(() => void unlock().then(resolve), EDGE_MS));
    const outcome = await policy.check(`Bearer ${k.secret}`, 'pdf').then((d) => (d.allow ? 'granted' : d.error.code), () => 'failed closed');
    await released;
    t.equal(outcome, 'failed closed', 'the store gave up before the edge did');
    t.equal(await store.openLeases(k.id), 0, 'no lease committed after the edge gave up');
    t.equal(await store.inFlight(k.id), 0, 'no render place held');
    t.equal(await store.monthUsed(k.id, '2026-09'), 0, 'no call reserved');
    t.equal((await policy.check(`Bearer ${k.secret}`, 'pdf')).allow, true, 'the next check is granted');
  });
}
