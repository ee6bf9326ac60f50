import t from 'tap';
import path from 'node:path';
import Database from 'better-sqlite3';
import { createPolicy } from '../../policy/authorize.ts';
import { createKey } from '../../policy/keys.ts';
import { BUILT_IN_PLANS } from '../../policy/plans.ts';
import { SQLITE_MIGRATIONS } from '../../policy/store/sqlite.ts';
import { rulesSuite } from './rules-suite.ts';
import { fakeClock, storeHome } from './stores.ts';

rulesSuite(t, 'sqlite');

t.test('a database left at migration 1 keeps its keys, leases and ledger through the latest', async (t) => {
  const home = await storeHome('sqlite');
  t.teardown(() => home.drop());
  const clock = fakeClock('2026-06-30T23:59:00Z');
  // What an older policy left behind: migration 1 only, a key with a settled call and an open lease.
  const old = home.open();
  const db = new Database(path.join(home.env.TINTYPE_DATA_DIR!, 'policy.sqlite'));
  db.exec('DELETE FROM schema_migrations');
  db.exec(SQLITE_MIGRATIONS[0]!.sql);
  db.prepare('INSERT INTO schema_migrations VALUES (1, 0)').run();
  db.close();
  const k = await createKey(old, BUILT_IN_PLANS, { plan: 'free', now: clock.now() });
  const before = createPolicy({ store: old, plans: BUILT_IN_PLANS, clock: clock.now, leaseTtlMs: 60_000 });
  const settled = await before.check(`Bearer ${k.secret}`, 'og');
  if (!settled.allow) throw new Error('not granted');
  await before.settle({ lease: settled.leaseId, status: 200, cache: 'miss' });
  const open = await before.check(`Bearer ${k.secret}`, 'pdf');
  if (!open.allow) throw new Error('not granted');
  await old.close();

  const store = home.open();
  t.teardown(() => store.close());
  await store.migrate();
  await store.migrate();
  const check = new Database(path.join(home.env.TINTYPE_DATA_DIR!, 'policy.sqlite'), { readonly: true });
  const versions = (check.prepare('SELECT version FROM schema_migrations ORDER BY version').all() as Array<{ version: number }>).map((r) => r.version);
  check.close();
  t.same(versions, SQLITE_MIGRATIONS.map((m) => m.version), 'every version recorded once');
  const after = createPolicy({ store, plans: BUILT_IN_PLANS, clock: clock.now, leaseTtlMs: 60_000 });
  t.match(await store.usage(k.id), [{ leaseId: settled.leaseId, metered: true }], 'the ledger is kept');
  t.equal(await store.openLeases(k.id), 1, 'the open lease is kept');
  t.equal(await store.inFlight(k.id), 1);
  t.equal(await after.settle({ lease: open.leaseId, status: 504, error: 'render_timeout' }), 'settled', 'and settles after the upgrade');
  t.equal(await store.monthUsed(k.id, '2026-06'), 2);
  const usage = await store.usage(k.id);
  t.same(usage.map((u) => u.leaseId), [settled.leaseId, open.leaseId], 'the ledger keeps its order');
  t.equal((await after.check(`Bearer ${k.secret}`, 'pdf')).allow, true, 'checks run on the new schema');
});
