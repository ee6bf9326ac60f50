/**
 * Upgrades (docs/helm.md, "Upgrade"): `tintype migrate` applies the schema once, with its own
 * credentials, and policy with TINTYPE_MIGRATE=wait waits for it instead of migrating: it does not
 * listen, and applies nothing, until the migrations its code knows are in. On both stores.
 */
import pg from 'pg';
import t from 'tap';
import { runTintype, startPolicyProcess, type PolicyProcess } from './process.ts';
import { storeHome, type StoreKind } from './stores.ts';

for (const kind of ['sqlite', 'postgres'] as StoreKind[]) {
  t.test(`${kind}: policy waits for the schema; tintype migrate applies it; --check tells`, async (t) => {
    const home = await storeHome(kind);
    t.teardown(() => home.drop());
    const before = await runTintype(['migrate', '--check'], home.env);
    t.equal(before.code, 1, before.stderr);
    t.match(before.stdout, /^schema: pending \d+(, \d+)*\n$/);

    let waiting!: () => void;
    const saidWaiting = new Promise<void>((resolve) => (waiting = resolve));
    let listening = false;
    const starting = startPolicyProcess({ ...home.env, TINTYPE_MIGRATE: 'wait' }, (e) => {
      if (e['event'] === 'schema_waiting') waiting();
    }).then((p) => {
      listening = true;
      return p;
    });
    t.teardown(async () => (await starting.catch(() => undefined))?.kill('SIGTERM'));
    await saidWaiting;
    const still = await runTintype(['migrate', '--check'], home.env);
    t.equal(still.code, 1, 'the waiting policy applied nothing');
    t.equal(listening, false, 'and does not listen');

    const applied = await runTintype(['migrate'], home.env);
    t.equal(applied.code, 0, applied.stderr);
    t.match(applied.stdout, /^schema: applied \d+(, \d+)*\n$/);
    const policy: PolicyProcess = await starting;
    t.ok(policy.port > 0, 'policy starts once the schema is in');
    const ready = await fetch(`http://127.0.0.1:${policy.adminPort}/healthz/ready`);
    t.equal(ready.status, 200);

    const again = await runTintype(['migrate'], home.env);
    t.equal(again.code, 0);
    t.equal(again.stdout, 'schema: up to date, nothing applied\n', 'safe to run again');
    const after = await runTintype(['migrate', '--check'], home.env);
    t.equal(after.code, 0);
    t.equal(after.stdout, 'schema: up to date\n');
  });
}

t.test('bad --timeout-s is refused with usage', async (t) => {
  const r = await runTintype(['migrate', '--timeout-s', 'soon'], {});
  t.equal(r.code, 2);
  t.match(r.stderr, /usage: tintype migrate/);
});

t.test('postgres: with TINTYPE_MIGRATE=wait, tintype keys needs no DDL rights (it checks the schema, never migrates)', async (t) => {
  const home = await storeHome('postgres');
  t.teardown(() => home.drop());
  const early = await runTintype(['keys', 'list'], { ...home.env, TINTYPE_MIGRATE: 'wait' });
  t.equal(early.code, 1);
  t.match(early.stderr, /the schema is not migrated yet .*: run tintype migrate first/);
  t.equal((await runTintype(['migrate'], home.env)).code, 0);
  // A role that may read and write the tables but create nothing, as a policy pod's may be.
  const url = new URL(home.env['DATABASE_URL']!);
  const role = `tintype_dml_${process.pid}`;
  const admin = new pg.Client({ connectionString: home.env['DATABASE_URL'] });
  await admin.connect();
  try {
    await admin.query(`DROP ROLE IF EXISTS ${role}`).catch(() => {});
    await admin.query(`CREATE ROLE ${role} LOGIN`);
    await admin.query(`REVOKE CREATE ON SCHEMA public FROM PUBLIC`);
    await admin.query(`GRANT USAGE ON SCHEMA public TO ${role}`);
    await admin.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO ${role}`);
    await admin.query(`GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO ${role}`);
  } finally {
    await admin.end();
  }
  t.teardown(async () => {
    const a = new pg.Client({ connectionString: home.env['DATABASE_URL'] });
    await a.connect();
    try { await a.query(`DROP OWNED BY ${role}`); await a.query(`DROP ROLE IF EXISTS ${role}`); } catch { /* dropped with the database */ } finally { await a.end(); }
  });
  url.username = role;
  const made = await runTintype(['keys', 'create', '--plan', 'free', '--name', 'dml'], { ...home.env, DATABASE_URL: url.toString(), TINTYPE_MIGRATE: 'wait' });
  t.equal(made.code, 0, made.stderr);
  t.match(made.stdout, /^secret: sk_/m);
});
