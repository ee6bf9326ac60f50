/**
 * Upgrades (docs/helm.md, "Upgrade"): `tintype migrate` applies the schema once, with its own
 * credentials, and policy with TINTYPE_MIGRATE=wait waits for it instead of migrating: it does not
 * listen, and applies nothing, until the migrations its code knows are in. On both stores.
 */
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
