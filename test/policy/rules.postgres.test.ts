import t, { type Test } from 'tap';
import pg from 'pg';
import { loadConfig } from '../../lib/config.ts';
import { createPolicy } from '../../policy/authorize.ts';
import { hashSecret, newSecret } from '../../policy/secrets.ts';
import { BUILT_IN_PLANS } from '../../policy/plans.ts';
import { PG_MIGRATIONS } from '../../policy/store/postgres-schema.ts';
import { openUsageReader, readUsage } from '../../policy/usage-reader.ts';
import net from 'node:net';
import { openPostgresStore } from '../../policy/store/postgres.ts';
import { PATIENT_ACQUIRE_MS, parallelChecksExact, policyOn, rulesSuite } from './rules-suite.ts';
import { fakeClock, storeHome } from './stores.ts';

rulesSuite(t, 'postgres');

/** How long each new connection through slowConnects() waits before it reaches PostgreSQL. */
const SLOW_CONNECT_MS = 700;

/**
 * A relay in front of PostgreSQL that opens each connection only after SLOW_CONNECT_MS, as a
 * loaded machine (or a far database) can: longer than the production 500 ms connect timeout.
 * Resolves to the database URL through it.
 */
async function slowConnects(t: Test, url: string): Promise<string> {
  const target = new URL(url);
  const sockets = new Set<net.Socket>();
  const server = net.createServer((c) => {
    sockets.add(c);
    c.on('error', () => {});
    c.once('close', () => sockets.delete(c));
    c.pause();
    setTimeout(() => {
      const up = net.connect(Number(target.port), target.hostname);
      sockets.add(up);
      up.on('error', () => c.destroy());
      up.once('close', () => { sockets.delete(up); c.destroy(); });
      c.once('close', () => up.destroy());
      c.pipe(up).pipe(c);
      c.resume();
    }, SLOW_CONNECT_MS);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => { for (const s of sockets) s.destroy(); server.close(() => r()); }));
  const slow = new URL(url);
  slow.port = String((server.address() as net.AddressInfo).port);
  return slow.toString();
}

t.test('parallel checks stay exact when every PostgreSQL connection is slow to open (the test gives its stores the time)', async (t) => {
  const home = await storeHome('postgres');
  t.teardown(() => home.drop());
  const direct = home.open();
  t.teardown(() => direct.close());
  await direct.migrate();
  const url = await slowConnects(t, home.env.DATABASE_URL!);
  const store = openPostgresStore({ url, poolSize: 10, acquireTimeoutMs: PATIENT_ACQUIRE_MS });
  const replica = openPostgresStore({ url, poolSize: 10, acquireTimeoutMs: PATIENT_ACQUIRE_MS });
  t.teardown(async () => { await store.close(); await replica.close(); });
  const clock = fakeClock('2026-07-07T07:07:07Z');
  await parallelChecksExact(t, { ...policyOn(store, clock), store, replica, clock });
});

t.test('with the production connect timeout, a check whose connection takes longer fails closed: nothing granted, nothing reserved', async (t) => {
  const home = await storeHome('postgres');
  t.teardown(() => home.drop());
  const direct = home.open();
  t.teardown(() => direct.close());
  await direct.migrate();
  const clock = fakeClock('2026-07-07T07:07:07Z');
  const k = await policyOn(direct, clock).key('scale');
  const store = openPostgresStore({ url: await slowConnects(t, home.env.DATABASE_URL!), poolSize: 10 });
  t.teardown(() => store.close());
  // policy/server.ts answers a check that throws with 503 busy (docs/operations.md "Stores"; test/policy/unreachable.test.ts).
  await t.rejects(policyOn(store, clock).policy.check(`Bearer ${k.secret}`, 'pdf'), /timeout exceeded when trying to connect|Connection terminated due to connection timeout/);
  t.equal(await direct.inFlight(k.id), 0, 'no render place taken');
  t.equal(await direct.monthUsed(k.id, '2026-07'), 0, 'nothing metered');
});

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
