import t from 'tap';
import pg from 'pg';
import { createPolicy } from '../../policy/authorize.ts';
import { createKey } from '../../policy/keys.ts';
import { BUILT_IN_PLANS } from '../../policy/plans.ts';
import { PG_MIGRATIONS } from '../../policy/store/postgres-schema.ts';
import { rulesSuite } from './rules-suite.ts';
import { fakeClock, storeHome } from './stores.ts';

rulesSuite(t, 'postgres');

t.test('a database left at migration 1 is brought to the latest at start, once', async (t) => {
  const home = await storeHome('postgres');
  t.teardown(() => home.drop());
  const c = new pg.Client({ connectionString: home.env.DATABASE_URL });
  await c.connect();
  try {
    // What an older policy left behind: only the first migration, recorded.
    await c.query('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)');
    await c.query(PG_MIGRATIONS[0]!.sql);
    await c.query('INSERT INTO schema_migrations VALUES (1, 0)');
    const store = home.open();
    t.teardown(() => store.close());
    await store.migrate();
    await store.migrate();
    const versions = (await c.query('SELECT version FROM schema_migrations ORDER BY version')).rows.map((r) => Number(r.version));
    t.same(versions, PG_MIGRATIONS.map((m) => m.version), 'every version recorded once');
    const clock = fakeClock('2026-06-01T00:00:00Z');
    const k = await createKey(store, BUILT_IN_PLANS, { plan: 'free', now: clock.now() });
    const policy = createPolicy({ store, plans: BUILT_IN_PLANS, clock: clock.now, leaseTtlMs: 1000 });
    t.equal((await policy.check(`Bearer ${k.secret}`, 'ping')).allow, true, 'checks run on the migrated schema');
  } finally {
    await c.end();
  }
});
