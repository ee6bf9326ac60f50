/**
 * The renderer's side of the operator's contract (lib/state-contract.ts): `GET /state` on the
 * admin port answers the real pool's slots, busy slots (now, and averaged over the last seconds),
 * guard and draining, read here as the controller reads it. A real renderer: Chromium, the
 * guard, the server.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { httpStateReader } from '../../controller/read-state.ts';
import { createGuard } from '../../guard/index.ts';
import { createLogger } from '../../lib/log.ts';
import { testGuardTokens, testLeaseKeyPair } from '../lib/leases.ts';
import { post, SITE_HOST, startHarness, startSite, until } from '../renderer/server/harness.ts';

const held = new Set<http.ServerResponse>();
const releaseAll = (): void => {
  for (const res of held) res.end('<!doctype html><p>released</p>');
  held.clear();
};
const site = await startSite((_req, res) => {
  res.writeHead(200, { 'content-type': 'text/html' });
  res.write('<!doctype html><p>waiting</p>'); // the body ends only when released
  held.add(res);
});
// A guard of the test's own, reached over its socket as a renderer reaches a guard apart, so
// that stopping it is a guard lost.
const dir = await mkdtemp(path.join(os.tmpdir(), 'tintype-state-'));
const socket = path.join(dir, 'guard.sock');
const guard = createGuard({
  socket, allowCidrs: [`${SITE_HOST}/32`], leasePublicKeys: [testLeaseKeyPair.publicKey], tokens: testGuardTokens, logger: createLogger('state-test', { level: 'error' }), stopGraceMs: 500,
});
await guard.start();
const h = await startHarness({ env: { TINTYPE_SLOTS: '2', TINTYPE_RENDER_TIMEOUT_MS: '20000' }, poolGuardSocket: socket });
t.teardown(async () => {
  releaseAll();
  await h.close();
  await guard.stop();
  await site.close();
  await rm(dir, { recursive: true, force: true });
});
const read = httpStateReader(5_000);

t.test('idle and verified', async (t) => {
  const res = await fetch(`${h.admin}/state`);
  t.equal(res.status, 200);
  t.match(res.headers.get('content-type'), /^application\/json/);
  const body = (await res.json()) as Record<string, any>;
  t.same(Object.keys(body).sort(), ['busy', 'busyMean', 'draining', 'guard', 'sandbox', 'slots']);
  t.match(body, { slots: 2, busy: 0, guard: 'verified', draining: false });
  // The start-up self-test renders on a slot, so the last seconds may hold some of it.
  t.ok(body.busyMean >= 0 && body.busyMean <= 2, 'busyMean is between none and every slot');
  t.equal((await fetch(`${h.base}/state`)).status, 401, 'not on the work port, where every path needs a lease');
});

t.test('a render in flight is a busy slot', async (t) => {
  const holding = post(h, 'screenshot', { url: `${site.origin}/a` });
  await until(() => h.pool.stats().busy === 1 && held.size === 1, 'the slot to be taken and the page asked for');
  const during = await read(h.admin);
  t.match(during, { slots: 2, busy: 1, guard: 'verified', draining: false });
  t.ok(during!.busyMean > 0 && during!.busyMean <= 2, 'the held slot counts in the mean');
  releaseAll();
  t.equal((await holding).status, 200);
  const after = await read(h.admin);
  t.match(after, { slots: 2, busy: 0, guard: 'verified', draining: false });
  t.ok(after!.busyMean > 0, 'a render that has just ended still counts in the mean of the last seconds');
});

t.test('a guard lost after the self-test passed reads lost', async (t) => {
  await guard.stop();
  const refused = await post(h, 'screenshot', { url: `${site.origin}/b` });
  t.equal(refused.status, 503);
  // (The self-test runs again meanwhile, on a slot of its own.)
  t.match(await read(h.admin), { guard: 'lost', slots: 2 });
});

t.test('a stopping renderer reads draining', async (t) => {
  // A request whose body is still arriving keeps the listener closing, not closed.
  const port = Number(new URL(h.base).port);
  const slow = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/v1/screenshot', headers: { 'content-type': 'application/json', 'content-length': '100' } });
  slow.on('error', () => {});
  slow.write('{');
  await new Promise((r) => setTimeout(r, 100));
  const stopping = h.server.stop();
  t.match(await read(h.admin), { draining: true });
  slow.destroy();
  await stopping;
});
