/**
 * The roles apart, end to end (test/e2e/apart.ts): policy on PostgreSQL, the guard in a
 * namespace of its own, two renderer pods (TINTYPE_ISOLATION=pod) that reach only the guard,
 * policy and the cache, the Redis cache, the embedded edge in front. Real processes, real
 * Chromium; the only pages rendered are the test site's, on the host's side of the guard's link.
 */
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { ROLE_PORTS, startApartWithSite, type Apart } from './apart.ts';
import { bearer, json, jsonWith } from './service.ts';
import type { Site } from './site.ts';
import { CACHE_HEADER } from '../../renderer/server/answer-headers.ts';

const RENDER_TIMEOUT_MS = 8000;
// Six processes and two Chromiums start, and a lease is waited out to its expiry: longer than
// the default per-file limit on a shared machine.
t.setTimeout(600_000);
const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47]);
/** A namespace id of its own per run (1–250), so parallel runs do not share links. */
const NET_ID = 1 + (process.pid % 250);

let apart: Apart;
let site: Site;

t.before(async () => {
  ({ apart, site } = await startApartWithSite(NET_ID, {
    renderTimeoutMs: RENDER_TIMEOUT_MS,
    slots: 1,
    plans: { apart: { monthlyQuota: 1000, perMinute: 1000, concurrentRenders: 4 } },
  }));
});

t.teardown(() => apart?.stop());

/** Whether a TCP connection from namespace `ns` to `host:port` is answered (a listener or a refusal). */
function reaches(ns: string, host: string, port: number): string {
  const code = `const s=require('net').connect({host:'${host}',port:${port},timeout:2000});` +
    `s.on('connect',()=>{console.log('connected');process.exit(0)});s.on('error',e=>{console.log(e.code);process.exit(0)});` +
    `s.on('timeout',()=>{console.log('timeout');process.exit(0)})`;
  const r = spawnSync('ip', ['netns', 'exec', ns, 'node', '-e', code], { encoding: 'utf8' });
  return r.stdout.trim();
}

t.test('the walls: a pod reaches the guard, policy and the cache, and nothing else', async (t) => {
  const n = apart.net;
  t.equal(reaches(n.ns('r1'), n.addr('g'), ROLE_PORTS.guard), 'connected', 'the guard');
  t.equal(reaches(n.ns('r1'), n.addr('p'), ROLE_PORTS.policy), 'connected', 'policy');
  t.equal(reaches(n.ns('r1'), n.addr('c'), ROLE_PORTS.cache), 'connected', 'the cache');
  t.equal(reaches(n.ns('r1'), n.siteAddr, 80), 'ENETUNREACH', 'not the site (only through the guard)');
  t.equal(reaches(n.ns('r1'), n.addr('r2'), ROLE_PORTS.renderer), 'ENETUNREACH', 'not the other pod');
  t.equal(reaches(n.ns('r1'), '10.202.' + n.id + '.1', 80), 'ENETUNREACH', 'not the host');
  t.equal(reaches(n.ns('g'), n.siteAddr, 80), 'ECONNREFUSED', 'the guard reaches out');
});

t.test('ping and a render through the edge, policy on PostgreSQL, each metered once', async (t) => {
  const k = await apart.key('apart');
  const ping = await apart.call({ path: '/v1/ping', headers: bearer(k.secret) });
  t.equal(ping.status, 200);
  t.equal(json(ping).pong, true);
  const body = JSON.stringify({ url: `${site.base}/page/apart`, width: 320, height: 200 });
  const shot = await apart.call({ method: 'POST', path: '/v1/screenshot', headers: jsonWith(k.secret), body });
  t.equal(shot.status, 200, shot.status === 200 ? 'rendered' : shot.body.toString('utf8'));
  t.ok(shot.body.subarray(0, 4).equals(PNG));
  t.equal(shot.headers[CACHE_HEADER], 'miss');
  // The other pod (the Service takes turns per connection) finds it in the shared cache.
  const again = await apart.call({ method: 'POST', path: '/v1/screenshot', headers: jsonWith(k.secret), body });
  t.equal(again.status, 200);
  t.equal(again.headers[CACHE_HEADER], 'hit');
  let rows = await apart.ledger(k.id);
  while (rows.length < 3) {
    await new Promise((r) => setTimeout(r, 50));
    rows = await apart.ledger(k.id);
  }
  t.match(rows, [
    { operation: 'ping', status: 200, metered: 1 },
    { operation: 'screenshot', status: 200, cache: 'miss', metered: 1 },
    { operation: 'screenshot', status: 200, cache: 'hit', metered: 1 },
  ]);
  t.ok(site.seen.includes('/page/apart'), 'the page was fetched through the guard');
});

t.test('policy restarted: 503 busy while it is down, no 500, recovery without restarting anything else', async (t) => {
  const k = await apart.key('apart');
  await apart.procs.policy.kill('SIGKILL');
  for (let i = 0; i < 3; i++) {
    const a = await apart.call({ path: '/v1/ping', headers: bearer(k.secret) });
    t.equal(a.status, 503, 'policy down: busy');
    t.same(json(a), { error: 'busy' });
    t.equal(a.headers['retry-after'], '1');
  }
  await apart.restart('policy');
  const a = await apart.call({ path: '/v1/ping', headers: bearer(k.secret) });
  t.equal(a.status, 200, 'policy back: served');
});

t.test('a pod killed mid-render: its render ends, the other pod serves, nothing stays leased', async (t) => {
  const k = await apart.key('apart');
  const held = `kill-${Date.now()}`;
  const html = `<img src="${site.base}/hold/${held}.png">`;
  const inFlight = apart.call({ method: 'POST', path: '/v1/html-to-image', headers: jsonWith(k.secret), body: JSON.stringify({ html, width: 100, height: 100 }) });
  await site.arrived(held);
  // The pod that holds it is the one with a slot in use (its admin port's metrics); a reading
  // can miss under load, so ask again until one pod says so.
  const holder = (): 'r1' | 'r2' | undefined => (['r1', 'r2'] as const).find((m) => {
    const r = spawnSync('ip', ['netns', 'exec', apart.net.ns('e'), 'node', '-e',
      `fetch('http://${apart.net.addr(m)}:${ROLE_PORTS.rendererAdmin}/metrics').then(r=>r.text()).then(t=>console.log(t)).catch(()=>console.log(''))`], { encoding: 'utf8' });
    return /^tintype_render_slots_busy 1$/m.test(r.stdout);
  });
  let victim = holder();
  for (let tries = 0; victim === undefined && tries < 20; tries++) {
    await new Promise((r) => setTimeout(r, 250));
    victim = holder();
  }
  if (victim === undefined) throw new Error('no renderer pod reports the held render');
  const survivor = victim === 'r1' ? 'r2' : 'r1';
  await apart.procs[victim].kill('SIGKILL');
  const a = await inFlight;
  t.ok([502, 503].includes(a.status), `the in-flight render ends (${a.status}), it does not hang`);
  // Until the Service sees the pod gone (its readiness probe), a request sent to it is 503 busy,
  // never a 500; then the survivor serves every request.
  for (;;) {
    const p = await apart.call({ path: '/v1/ping', headers: bearer(k.secret) });
    if (p.status === 200) break;
    t.equal(p.status, 503, 'while the pod is still listed: busy');
    t.same(json(p), { error: 'busy' });
  }
  for (let i = 0; i < 3; i++) {
    const p = await apart.call({ path: '/v1/ping', headers: bearer(k.secret) });
    t.equal(p.status, 200, `served by ${survivor}`);
  }
  site.release(held);
  // The killed pod's lease is settled by nobody: it expires (budget + grace), is freed and
  // recorded unsettled, not metered.
  while ((await apart.openLeases(k.id)) > 0) await new Promise((r) => setTimeout(r, 250));
  const rows = await apart.ledger(k.id);
  t.match(rows.filter((r) => r.operation === 'html-to-image'), [{ outcome: 'unsettled', metered: 0 }], 'expired, not metered');
  await apart.restart(victim);
  const back = await apart.call({ path: '/v1/ping', headers: bearer(k.secret) });
  t.equal(back.status, 200, `${victim} back`);
});
