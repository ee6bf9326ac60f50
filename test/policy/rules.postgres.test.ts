import t from 'tap';
import pg from 'pg';
import { loadConfig } from '../../lib/config.ts';
import { createPolicy } from '../../policy/authorize.ts';
import { hashSecret, newSecret } from '../../policy/secrets.ts';
import { BUILT_IN_PLANS } from '../../policy/plans.ts';
import { PG_MIGRATIONS } from '../../policy/store/postgres-schema.ts';
import { openUsageReader, readUsage } from '../../policy/usage-reader.ts';
import { rulesSuite } from './rules-suite.ts';
import { fakeClock, storeHome } from './stores.ts';

rulesSuite(t, 'postgres');

for (const left of [1, 2, 4]) {
  t.test(`a database left at migration ${left} is brought to the latest at start, once, keeping its leases and ledger`, async (t) => {
    const home = await storeHome('postgres');
    t.teardown(() => home.drop());
    const c = new pg.Client({ connectionString: home.env.DATABASE_URL });
    await c.connect();
    t.teardown(() => c.end());
    const clock = fakeClock('2026-06-01T00:00:00Z');
    const now = clock.now();
    const secret = newSecret();
    // What an older policy left behind: its migrations, recorded, and a key with one metered call
    // in the ledger and two renders in flight.
    await c.query('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)');
    for (const m of PG_MIGRATIONS.filter((m) => m.version <= left)) {
      await c.query(m.sql);
      await c.query('INSERT INTO schema_migrations VALUES ($1, 0)', [m.version]);
    }
    await c.query("INSERT INTO api_keys VALUES ('key_old', $1, '', 'free', $2, NULL)", [hashSecret(secret), now]);
    await c.query("INSERT INTO key_state VALUES ('key_old', $1, 3, 2)", [now]);
    await c.query("INSERT INTO usage_months VALUES ('key_old', '2026-06', 3)");
    for (const id of ['lease_a', 'lease_b']) {
      await c.query("INSERT INTO leases VALUES ($1, 'key_old', 'pdf', TRUE, '2026-06', $2, $3)", [id, now, now + 60_000]);
    }
    await c.query(`INSERT INTO usage (lease_id, key_id, operation, month, status, error, cache, metered, outcome, checked_at, recorded_at)
      VALUES ('lease_0', 'key_old', 'og', '2026-06', 200, NULL, 'miss', TRUE, 'settled', $1, $1)`, [now - 1000]);

    const older = openUsageReader(loadConfig(home.env));
    t.equal((await readUsage(older, BUILT_IN_PLANS, '2026-06', { keyId: 'key_old' })).totals.records, 1,
      'the usage report of a store not yet upgraded counts its ledger');
    await older.close();
    const store = home.open();
    t.teardown(() => store.close());
    await store.migrate();
    await store.migrate();
    const versions = (await c.query('SELECT version FROM schema_migrations ORDER BY version')).rows.map((r) => Number(r.version));
    t.same(versions, PG_MIGRATIONS.map((m) => m.version), 'every version recorded once');
    const policy = createPolicy({ store, plans: BUILT_IN_PLANS, clock: clock.now, leaseTtlMs: 1000 });
    t.equal(await store.openLeases('key_old'), 2, 'the open leases are kept');
    t.equal(await policy.settle({ lease: 'lease_a', status: 504, error: 'render_timeout' }), 'settled', 'a lease from before settles after the upgrade');
    t.equal(await policy.settle({ lease: 'lease_b', status: 400 }), 'settled', 'and one closed by a 400');
    t.equal(await policy.settle({ lease: 'lease_b', status: 400 }), 'already', 'idempotently');
    t.equal(await store.monthUsed('key_old', '2026-06'), 2, 'the 504 is metered, the 400 gave its call back');
    t.equal(await store.inFlight('key_old'), 0);
    t.same((await store.usage('key_old')).map((u) => u.leaseId), ['lease_0', 'lease_a'], 'the ledger keeps its order; the 400 writes no usage');
    t.equal((await policy.check(`Bearer ${secret}`, 'ping')).allow, true, 'checks run on the migrated schema');
    const reader = openUsageReader(loadConfig(home.env));
    const june = await readUsage(reader, BUILT_IN_PLANS, '2026-06', { keyId: 'key_old' });
    await reader.close();
    t.same([june.totals.records, june.totals.metered, june.totals.statuses], [2, 2, { 200: 1, 504: 1 }],
      'the usage report counts the record from before the upgrade and the one after');
  });
}
