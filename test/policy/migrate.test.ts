/**
 * Upgrades (docs/helm.md, "Upgrade"): `tintype migrate` applies the schema once, with its own
 * credentials, and policy with TINTYPE_MIGRATE=wait waits for it instead of migrating: it does not
 * listen, and applies nothing, until the migrations its code knows are in. On both stores.
 */
import net from 'node:net';
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

t.test('bad --timeout-s and --wait-s are refused with usage', async (t) => {
  for (const bad of [['--timeout-s', 'soon'], ['--timeout-s', '0'], ['--wait-s=-1'], ['--wait-s', '1.5']]) {
    const r = await runTintype(['migrate', ...bad], {});
    t.equal(r.code, 2, bad.join(' '));
    t.match(r.stderr, /usage: tintype migrate/);
  }
});

/** A loopback port nothing listens on (yet): one the system gave and took back. */
async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const { port } = s.address() as net.AddressInfo;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

/** Starts accepting on `port` and relays each connection to PostgreSQL at 127.0.0.1:5432. */
async function postgresOn(port: number): Promise<() => Promise<void>> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((c) => {
    const up = net.connect(5432, '127.0.0.1');
    for (const s of [c, up]) {
      sockets.add(s);
      s.on('error', () => {});
      s.once('close', () => sockets.delete(s));
    }
    c.once('close', () => up.destroy());
    up.once('close', () => c.destroy());
    c.pipe(up).pipe(c);
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
}

t.test('postgres: a database that starts accepting later is waited for within --wait-s, then migrated', async (t) => {
  const home = await storeHome('postgres');
  t.teardown(() => home.drop());
  const url = new URL(home.env['DATABASE_URL']!);
  url.port = String(await freePort());
  let stop: Promise<() => Promise<void>> | undefined;
  // PostgreSQL comes up once migrate has found it missing and said it waits (a chart installed
  // beside its database, whose hook Job starts first).
  const r = await runTintype(['migrate', '--wait-s', '120'], { ...home.env, DATABASE_URL: url.toString() }, (stderr) => {
    if (stop === undefined && /cannot be reached yet \(ECONNREFUSED\)/.test(stderr)) stop = postgresOn(Number(url.port));
  });
  if (stop !== undefined) t.teardown(async () => (await stop!)());
  t.ok(stop !== undefined, 'it found nothing listening and said it waits');
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /^schema: applied \d+(, \d+)*\n$/);
  t.notOk(r.stderr.includes(url.host), 'the waiting lines say why, not where');
  const check = await runTintype(['migrate', '--check'], home.env);
  t.equal(check.stdout, 'schema: up to date\n');
});

t.test('postgres: nothing accepting within --wait-s fails with the last error; a refusal fails at once', async (t) => {
  const home = await storeHome('postgres');
  t.teardown(() => home.drop());
  const url = new URL(home.env['DATABASE_URL']!);
  url.port = String(await freePort());
  const gone = await runTintype(['migrate', '--wait-s', '1'], { ...home.env, DATABASE_URL: url.toString() });
  t.equal(gone.code, 1);
  t.match(gone.stderr, /cannot be reached yet \(ECONNREFUSED\); trying again/);
  t.match(gone.stderr, /tintype migrate: .*ECONNREFUSED/);

  // A database that does not exist is a mistake to fix, not a server still starting.
  const missing = new URL(home.env['DATABASE_URL']!);
  missing.pathname = '/tintype_no_such_database';
  const refused = await runTintype(['migrate', '--wait-s', '120'], { ...home.env, DATABASE_URL: missing.toString() });
  t.equal(refused.code, 1);
  t.match(refused.stderr, /tintype_no_such_database/);
  t.notMatch(refused.stderr, /cannot be reached yet/, 'never tried again');
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
