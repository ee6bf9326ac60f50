import t from 'tap';
import path from 'node:path';
import Database from '../../policy/store/sqlite-driver.ts';
import { loadConfig } from '../../lib/config.ts';
import { createPolicy } from '../../policy/authorize.ts';
import { hashSecret, newSecret } from '../../policy/secrets.ts';
import { BUILT_IN_PLANS } from '../../policy/plans.ts';
import { SQLITE_MIGRATIONS } from '../../policy/store/sqlite-schema.ts';
import { openUsageReader, readUsage } from '../../policy/usage-reader.ts';
import { rulesSuite } from './rules-suite.ts';
import { fakeClock, storeHome } from './stores.ts';

rulesSuite(t, 'sqlite');

for (const left of [1, 2, 4]) {
  t.test(`a database left at migration ${left} keeps its keys, leases and ledger through the latest`, async (t) => {
    const home = await storeHome('sqlite');
    t.teardown(() => home.drop());
    const clock = fakeClock('2026-06-30T23:59:00Z');
    // What an older policy left behind, written as it wrote it: a key with one metered call in
    // the ledger and two renders in flight (three calls reserved, two places held).
    const secret = newSecret();
    const now = clock.now();
    const db = new Database(path.join(home.env.TINTYPE_DATA_DIR!, 'policy.sqlite'));
    db.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)');
    for (const m of SQLITE_MIGRATIONS.filter((m) => m.version <= left)) {
      db.exec(m.sql);
      db.prepare('INSERT INTO schema_migrations VALUES (?, 0)').run(m.version);
    }
    db.prepare('INSERT INTO api_keys VALUES (?, ?, ?, ?, ?, NULL)').run('key_old', hashSecret(secret), '', 'free', now);
    db.prepare('INSERT INTO key_state VALUES (?, ?, 3, 2)').run('key_old', now - (now % 60_000));
    db.prepare('INSERT INTO usage_months VALUES (?, ?, 3)').run('key_old', '2026-06');
    const lease = db.prepare('INSERT INTO leases (id, key_id, operation, render, month, created_at, expires_at) VALUES (?, ?, ?, 1, ?, ?, ?)');
    lease.run('lease_a', 'key_old', 'pdf', '2026-06', now, now + 60_000);
    lease.run('lease_b', 'key_old', 'og', '2026-06', now, now + 60_000);
    db.prepare(`INSERT INTO usage (lease_id, key_id, operation, month, status, error, cache, metered, outcome, checked_at, recorded_at)
      VALUES ('lease_0', 'key_old', 'og', '2026-06', 200, NULL, 'miss', 1, 'settled', ?, ?)`).run(now - 1000, now - 500);
    db.close();

    const older = openUsageReader(loadConfig(home.env));
    t.equal((await readUsage(older, BUILT_IN_PLANS, '2026-06', { keyId: 'key_old' })).totals.records, 1,
      'the usage report of a store not yet upgraded counts its ledger');
    await older.close();
    const store = home.open();
    t.teardown(() => store.close());
    await store.migrate();
    await store.migrate();
    const check = new Database(path.join(home.env.TINTYPE_DATA_DIR!, 'policy.sqlite'), { readonly: true });
    const versions = (check.prepare('SELECT version FROM schema_migrations ORDER BY version').all() as Array<{ version: number }>).map((r) => r.version);
    check.close();
    t.same(versions, SQLITE_MIGRATIONS.map((m) => m.version), 'every version recorded once');
    const after = createPolicy({ store, plans: BUILT_IN_PLANS, clock: clock.now, leaseTtlMs: 60_000 });
    t.match(await store.usage('key_old'), [{ leaseId: 'lease_0', metered: true }], 'the ledger is kept');
    t.equal(await store.openLeases('key_old'), 2, 'the open leases are kept');
    t.equal(await store.inFlight('key_old'), 2);
    t.equal(await after.settle({ lease: 'lease_a', status: 504, error: 'render_timeout' }), 'settled', 'a lease from before settles after the upgrade');
    t.equal(await after.settle({ lease: 'lease_b', status: 400 }), 'settled', 'and one closed by a 400');
    t.equal(await after.settle({ lease: 'lease_b', status: 400 }), 'already', 'idempotently');
    t.equal(await store.monthUsed('key_old', '2026-06'), 2, 'the 504 is metered, the 400 gave its call back');
    t.equal(await store.inFlight('key_old'), 0);
    const usage = await store.usage('key_old');
    t.same(usage.map((u) => u.leaseId), ['lease_0', 'lease_a'], 'the ledger keeps its order; the 400 writes no usage');
    t.equal((await after.check(`Bearer ${secret}`, 'pdf')).allow, true, 'checks run on the new schema');
    const reader = openUsageReader(loadConfig(home.env));
    const june = await readUsage(reader, BUILT_IN_PLANS, '2026-06', { keyId: 'key_old' });
    await reader.close();
    t.same([june.totals.records, june.totals.metered, june.totals.statuses], [2, 2, { 200: 1, 504: 1 }],
      'the usage report counts the record from before the upgrade and the one after');
  });
}
