/**
 * The egress part of policy's store on SQLite and PostgreSQL alike (policy/store/egress-store.ts):
 * keys' policies and the generation that tells replicas to read them again, the audit trail
 * written in batches and read back exactly (by key, window and decision), retention; and two
 * policy replicas' lists (policy/egress.ts) following a change made through another connection.
 */
import t from 'tap';
import { parseEgressPolicy } from '../../lib/egress.ts';
import { createLogger } from '../../lib/log.ts';
import { egressPolicies } from '../../policy/egress.ts';
import { FRESH_MS } from '../../policy/fresh-reads.ts';
import type { EgressAuditRecord } from '../../policy/store/egress-store.ts';
import { storeHome, type StoreKind } from './stores.ts';

const T0 = Date.parse('2026-11-24T10:00:00Z');

for (const kind of ['sqlite', 'postgres'] as StoreKind[]) {
  t.test(`${kind}: policies, generation, audit, retention`, async (t) => {
    const home = await storeHome(kind);
    t.teardown(() => home.drop());
    const store = home.open();
    t.teardown(() => store.close());
    await store.migrate();
    await store.createKey({ id: 'key_a', hash: 'h_a', name: 'a', plan: 'pro', createdAt: T0, revokedAt: null });
    await store.createKey({ id: 'key_b', hash: 'h_b', name: 'b', plan: 'pro', createdAt: T0, revokedAt: null });
    const e = store.egress;

    const g0 = await e.generation();
    const list = parseEgressPolicy('example.com,*.example.org');
    t.equal(await e.setPolicy('key_a', list, T0), true);
    t.equal(await e.setPolicy('key_nobody', list, T0), false, 'no such key: nothing set');
    const g1 = await e.generation();
    t.ok(g1 > g0, 'a change moves the generation');
    const read = await e.policies();
    t.same([...read.byKey], [['key_a', list]]);
    t.same([...read.keys].sort(), ['key_a', 'key_b'], 'every key is known');
    t.equal(read.generation, g1);
    t.same(await e.policyOf('key_a'), list);
    t.equal(await e.policyOf('key_b'), undefined);
    t.equal(await e.setPolicy('key_a', undefined, T0), true, 'cleared');
    t.equal(await e.policyOf('key_a'), undefined);
    t.ok((await e.generation()) > g1);

    const rec = (at: number, keyId: string, host: string | null, decision: EgressAuditRecord['decision']): EgressAuditRecord => ({
      at, keyId, renderId: `lease_${at}`, operation: 'screenshot', host, port: host === null ? null : 443, decision,
      reason: decision === 'allowed' ? null : 'not_allowed_for_key', mode: 'enforce',
    });
    const day = 86_400_000;
    const written = [
      rec(T0 - 40 * day, 'key_a', 'old.example', 'refused'),
      rec(T0, 'key_a', 'example.com', 'allowed'),
      rec(T0, 'key_a', 'cdn.other.net', 'refused'),
      rec(T0 + 1, 'key_b', 'example.com', 'would_refuse'),
      rec(T0 + 2, 'key_a', null, 'refused'),
    ];
    await e.writeAudit(written);
    await e.writeAudit([]);
    t.same(await e.readAudit({ keyId: 'key_a', limit: 100 }), written.filter((r) => r.keyId === 'key_a'), 'in order, exactly');
    t.same(await e.readAudit({ keyId: 'key_a', since: T0, until: T0 + 2, limit: 100 }), written.slice(1, 3), 'since inclusive, until exclusive');
    t.same(await e.readAudit({ keyId: 'key_a', decision: 'refused', limit: 100 }), [written[0], written[2], written[4]]);
    t.same(await e.readAudit({ keyId: 'key_a', limit: 2 }), written.slice(0, 2), 'bounded');
    t.equal(await e.pruneAudit(T0 - 30 * day, 1_000), 1, 'only what is past the retention');
    t.same((await e.readAudit({ keyId: 'key_a', limit: 100 })).map((r) => r.host), ['example.com', 'cdn.other.net', null]);
  });

  t.test(`${kind}: a list older than FRESH_MS is read again before a check goes on; a store that does not answer fails it`, async (t) => {
    const home = await storeHome(kind);
    t.teardown(() => home.drop());
    const admin = home.open();
    t.teardown(() => admin.close());
    await admin.migrate();
    await admin.createKey({ id: 'key_a', hash: 'h_a', name: '', plan: 'pro', createdAt: T0, revokedAt: null });
    await admin.egress.setPolicy('key_a', parseEgressPolicy('a.example'), T0);
    const replica = home.open();
    let clock = 0;
    const lists = egressPolicies(replica.egress, createLogger('test', { level: 'error' }), () => clock);
    await lists.start();
    lists.stop(); // no polls of its own: only fresh() reads from here on
    t.same((await lists.of('key_a'))?.allow, ['a.example']);
    await admin.egress.setPolicy('key_a', parseEgressPolicy('b.example'), T0);
    clock += FRESH_MS;
    await lists.fresh();
    t.same((await lists.of('key_a'))?.allow, ['a.example'], 'read within FRESH_MS: not read again');
    clock += 1;
    await lists.fresh();
    t.same((await lists.of('key_a'))?.allow, ['b.example'], 'older: read again before the check goes on');
    await replica.close();
    clock += FRESH_MS + 1;
    await t.rejects(lists.fresh(), 'the store does not answer: the check fails closed');
  });

  t.test(`${kind}: two replicas' lists follow a change made elsewhere; a key made since is looked up`, async (t) => {
    const home = await storeHome(kind);
    t.teardown(() => home.drop());
    const admin = home.open();
    t.teardown(() => admin.close());
    await admin.migrate();
    const replicas = [home.open(), home.open()];
    const lists = replicas.map((s) => egressPolicies(s.egress, createLogger('test', { level: 'error' })));
    t.teardown(async () => {
      for (const l of lists) l.stop();
      for (const r of replicas) await r.close();
    });
    for (const l of lists) await l.start();
    for (const l of lists) await l.fresh();
    // Made after both replicas read everything, with its list set before its secret could be used.
    await admin.createKey({ id: 'key_new', hash: 'h_new', name: '', plan: 'pro', createdAt: T0, revokedAt: null });
    const first = parseEgressPolicy('a.example');
    await admin.egress.setPolicy('key_new', first, T0);
    for (const l of lists) t.same(await l.of('key_new'), first, 'a key not read yet is looked up');
    const second = parseEgressPolicy('b.example', 'report');
    await admin.egress.setPolicy('key_new', second, T0);
    // Each replica takes the change at one of its next polls (POLL_MS); waited for, not timed.
    for (const l of lists) {
      while ((await l.of('key_new'))?.mode !== 'report') await new Promise((r) => setTimeout(r, 50));
      t.same(await l.of('key_new'), second);
    }
  });
}
