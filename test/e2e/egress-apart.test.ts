/**
 * Egress policy per key with the roles apart (test/e2e/apart.ts): policy on PostgreSQL signs the
 * key's list into its lease, the edge carries it, a renderer pod (pod isolation) opens the render
 * at the guard in its own namespace, which checks the lease with the public key alone, judges the
 * fetch by the list and hands its decision back; the renderer posts it to policy, which writes it
 * to PostgreSQL, where `tintype egress` reads it. docs/security.md "Egress policy per key".
 */
import t from 'tap';
import { startApartWithSite, type Apart } from './apart.ts';
import { json, jsonWith, runTintype } from './service.ts';
import type { Site } from './site.ts';

t.setTimeout(600_000);
const NET_ID = 1 + ((process.pid + 97) % 250);

let apart: Apart;
let site: Site;
t.before(async () => {
  ({ apart, site } = await startApartWithSite(NET_ID, {
    renderTimeoutMs: 8000,
    slots: 1,
    plans: { apart: { monthlyQuota: 1000, perMinute: 1000, concurrentRenders: 4 } },
  }));
});
t.teardown(() => apart?.stop());

/** A key made with its list, by `tintype keys create` against policy's PostgreSQL. */
async function keyWith(...egress: string[]): Promise<{ id: string; secret: string }> {
  const r = await runTintype(['keys', 'create', '--plan', 'apart', ...egress], apart.keysEnv);
  if (r.code !== 0) throw new Error(r.stderr);
  return { id: /^id: (\S+)$/m.exec(r.stdout)![1]!, secret: /^secret: (\S+)$/m.exec(r.stdout)![1]! };
}

async function trail(keyId: string, n: number): Promise<Array<Record<string, unknown>>> {
  for (;;) {
    const r = await runTintype(['egress', '--key', keyId, '--format', 'json'], apart.keysEnv);
    if (r.code !== 0) throw new Error(r.stderr);
    const rows = JSON.parse(r.stdout) as Array<Record<string, unknown>>;
    if (rows.length >= n) return rows;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

t.test('report: the guard apart records a fetch outside the list; the trail is read from PostgreSQL', async (t) => {
  const k = await keyWith('--egress-allow', 'docs.example', '--egress-mode', 'report');
  const url = `${site.base}/page/egress-report`;
  const a = await apart.call({ method: 'POST', path: '/v1/screenshot', headers: jsonWith(k.secret), body: JSON.stringify({ url, width: 200, height: 100 }) });
  t.equal(a.status, 200, a.status === 200 ? 'rendered' : a.body.toString());
  const u = new URL(url);
  const rows = await trail(k.id, 1);
  t.same(rows.map((r) => [r['host'], r['port'], r['decision'], r['reason'], r['mode'], r['operation']]), [
    [u.hostname, Number(u.port || 80), 'would_refuse', 'not_allowed_for_key', 'report', 'screenshot'],
  ], 'an address is never in a list of names: recorded, and fetched');
});

t.test('enforce: the page outside the list is 422 not_allowed_for_key, recorded', async (t) => {
  const k = await keyWith('--egress-allow', 'docs.example');
  const url = `${site.base}/page/egress-enforce`;
  const a = await apart.call({ method: 'POST', path: '/v1/screenshot', headers: jsonWith(k.secret), body: JSON.stringify({ url }) });
  t.equal(a.status, 422);
  t.same(json(a), { error: 'url_rejected', reason: 'not_allowed_for_key' });
  const rows = await trail(k.id, 1);
  t.same(rows.map((r) => [r['decision'], r['reason'], r['mode']]), [['refused', 'not_allowed_for_key', 'enforce']]);
});
