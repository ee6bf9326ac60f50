/**
 * The bounded answers (spec Part 7, 2.1; docs/architecture.md §2 settle) with real Chromium: 503 busy
 * with every slot taken, 504 render_timeout for a page that never reaches networkidle, 502
 * render_too_large, a client that goes away mid-render, and 503 guard_unverified while the
 * self-test has not passed. Each lease settles exactly once, metered only for 200, 502, 504.
 */
import path from 'node:path';
import type http from 'node:http';
import t from 'tap';
import { settleIsMetered } from '../../../lib/policy-contract.ts';
import { newLease, post, startHarness, startSite, until } from './harness.ts';

/** Responses the site holds until the test lets them go. */
const held = new Set<http.ServerResponse>();
function releaseAll(): void {
  for (const res of held) res.end('<!doctype html><p>released</p>');
  held.clear();
}
const site = await startSite((req, res) => {
  const p = (req.url ?? '/').split('?', 1)[0];
  if (p === '/hold') {
    // CORS allowed, so a fetch from markup (an opaque origin) stays in flight rather than failing.
    res.writeHead(200, { 'content-type': 'text/html', 'access-control-allow-origin': '*' });
    res.write('<!doctype html><p>waiting</p>'); // headers sent, the body never ends until released
    held.add(res);
    return;
  }
  if (p === '/never-idle') {
    // Loads at once; a fetch that never answers keeps the network busy, so networkidle never comes.
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<!doctype html><p>busy forever</p><script>fetch("/hold")</script>');
    return;
  }
  res.writeHead(200, { 'content-type': 'text/html' });
  res.end('<!doctype html><p>ok</p>');
});

const NOISE = `<canvas id=c width=600 height=600></canvas><script>
const x=document.getElementById('c').getContext('2d');let s=3;
for(let i=0;i<600;i+=3)for(let j=0;j<600;j+=3){s=(s*1103515245+12345)%2147483648;x.fillStyle='#'+(s%16777216).toString(16).padStart(6,'0');x.fillRect(i,j,3,3);}
</script>`;

/**
 * The render budget: the 504 tests wait it out, and every other render here must fit in it while
 * the whole suite runs two files at a time beside it.
 */
const BUDGET_MS = 8_000;

const h = await startHarness({
  env: { TINTYPE_SLOTS: '1', TINTYPE_RENDER_TIMEOUT_MS: String(BUDGET_MS), TINTYPE_MAX_OUTPUT_BYTES: '60000' },
});
t.teardown(async () => {
  releaseAll();
  await h.close();
  await site.close();
});

/** The settle of `lease`, once it arrives; fails if it arrives twice. */
async function settledOf(lease: string) {
  await until(() => h.settler.settled.some((s) => s.lease === lease), `the settle of ${lease}`);
  await new Promise((r) => setTimeout(r, 200));
  const all = h.settler.settled.filter((s) => s.lease === lease);
  if (all.length !== 1) throw new Error(`lease ${lease} settled ${all.length} times`);
  return all[0]!;
}

t.test('503 busy with retry-after: 1 at once when every slot is taken, not metered', async (t) => {
  const first = newLease('screenshot');
  const holding = post(h, 'screenshot', { url: `${site.origin}/hold` }, { lease: first });
  // The page itself asked for, so the release below reaches it: a slot is taken before navigation starts.
  await until(() => h.pool.stats().busy === 1 && held.size === 1, 'the slot to be taken and the page asked for');
  const lease = newLease('html-to-image');
  const busy = await post(h, 'html-to-image', { html: '<p>x</p>' }, { lease });
  t.equal(busy.status, 503);
  t.same(busy.json(), { error: 'busy' });
  t.equal(busy.headers.get('retry-after'), '1');
  const s = await settledOf(lease);
  t.same(s, { lease, status: 503, error: 'busy' });
  t.notOk(settleIsMetered(s), 'busy is not metered');
  releaseAll();
  const done = await holding;
  t.equal(done.status, 200, 'the render holding the slot finishes');
  t.same(await settledOf(first), { lease: first, status: 200, cache: 'miss' }, 'and settles metered, miss');
  t.equal((await post(h, 'html-to-image', { html: '<p>x</p>', width: 10, height: 10 })).status, 200, 'the slot is free again');
});

t.test('504 render_timeout when networkidle never comes; the slot is freed', async (t) => {
  for (const [op, body] of [
    ['screenshot', { url: `${site.origin}/never-idle`, waitUntil: 'networkidle' }],
    ['html-to-image', { html: `<p>busy</p><script>fetch("${site.origin}/hold")</script>`, waitUntil: 'networkidle' }],
    ['pdf', { html: `<p>busy</p><script>fetch("${site.origin}/hold")</script>`, waitUntil: 'networkidle' }],
    ['pdf', { url: `${site.origin}/never-idle`, waitUntil: 'networkidle' }],
  ] as const) {
    const lease = newLease(op);
    const a = await post(h, op, body, { lease });
    t.equal(a.status, 504, `${op}: 504`);
    t.same(a.json(), { error: 'render_timeout' }, `${op}: body`);
    const s = await settledOf(lease);
    t.same(s, { lease, status: 504, error: 'render_timeout' }, `${op}: settled`);
    t.ok(settleIsMetered(s), `${op}: a 504 is metered`);
    await until(() => h.pool.stats().busy === 0, 'the slot to be freed');
  }
  const ok = await post(h, 'screenshot', { url: `${site.origin}/never-idle`, waitUntil: 'load', width: 20, height: 20 });
  t.equal(ok.status, 200, 'the same page with waitUntil load renders');
  releaseAll();
});

t.test('markup and pages settle for every waitUntil; networkidle when the network goes quiet', async (t) => {
  for (const [op, body] of [
    ['html-to-image', { html: '<p>quiet</p>', width: 20, height: 20, waitUntil: 'networkidle' }],
    ['html-to-image', { html: '<p>early</p>', width: 20, height: 20, waitUntil: 'domcontentloaded' }],
    ['pdf', { html: '<p>early</p>', waitUntil: 'domcontentloaded' }],
    ['html-to-image', { html: `<img src="${site.origin}/ok.png"><p>one request</p>`, width: 20, height: 20, waitUntil: 'networkidle' }],
    ['pdf', { html: '<p>quiet</p>', waitUntil: 'networkidle' }],
    ['screenshot', { url: `${site.origin}/quiet`, width: 20, height: 20, waitUntil: 'networkidle' }],
    ['pdf', { url: `${site.origin}/quiet`, waitUntil: 'networkidle' }],
  ] as const) {
    const a = await post(h, op, body);
    t.equal(a.status, 200, `${op} ${'html' in body ? 'markup' : 'url'}: 200 inside the ${BUDGET_MS / 1000} s budget`);
  }
});

t.test('502 render_too_large past TINTYPE_MAX_OUTPUT_BYTES, metered, not cached', async (t) => {
  const leases = [newLease('html-to-image'), newLease('html-to-image')];
  for (const lease of leases) {
    const a = await post(h, 'html-to-image', { html: NOISE, width: 600, height: 600 }, { lease });
    t.equal(a.status, 502);
    t.same(a.json(), { error: 'render_too_large' });
    const s = await settledOf(lease);
    t.same(s, { lease, status: 502, error: 'render_too_large' }, 'settled without a cache outcome');
    t.ok(settleIsMetered(s), 'a 502 is metered');
  }
  const small = await post(h, 'html-to-image', { html: NOISE, width: 50, height: 50 });
  t.equal(small.status, 200, 'a small render of the same markup fits');
  const pdfLease = newLease('pdf');
  const pdf = await post(h, 'pdf', { html: NOISE }, { lease: pdfLease });
  t.equal(pdf.status, 502, 'pdf: cut off while reading the stream');
  t.same(pdf.json(), { error: 'render_too_large' });
  t.same(await settledOf(pdfLease), { lease: pdfLease, status: 502, error: 'render_too_large' });
  t.equal((await post(h, 'pdf', { html: '<p>small</p>' })).status, 200, 'a small pdf fits');
});

t.test('a client that goes away: the render stops, the slot is freed, the lease settles once', async (t) => {
  const lease = newLease('screenshot');
  const controller = new AbortController();
  // A URL of its own: /hold was cached by the busy test.
  const gone = post(h, 'screenshot', { url: `${site.origin}/hold?client=gone` }, { lease, signal: controller.signal }).catch((e: Error) => e);
  await until(() => h.pool.stats().busy === 1 && held.size > 0, 'the render to wait on the target');
  controller.abort();
  t.type(await gone, Error, 'the client gave up');
  await until(() => h.pool.stats().busy === 0, 'the slot to be freed while the page still hangs');
  t.ok(held.size > 0, 'the target still has not answered');
  const s = await settledOf(lease);
  t.equal(s.status, 499, 'recorded as client closed');
  t.notOk(settleIsMetered(s), 'not metered');
  const next = await post(h, 'html-to-image', { html: '<p>x</p>', width: 10, height: 10 });
  t.equal(next.status, 200, 'the next render gets the slot');
  releaseAll();
});

t.test('503 guard_unverified until the self-test passes; ready fails, live does not', async (t) => {
  const blind = await startHarness({ poolGuardSocket: path.join(h.dir, 'no-guard-here.sock'), awaitSelfTest: false });
  t.teardown(() => blind.close());
  const lease = newLease('html-to-image');
  const a = await post(blind, 'html-to-image', { html: '<p>x</p>' }, { lease });
  t.equal(a.status, 503);
  t.same(a.json(), { error: 'guard_unverified' });
  t.equal(a.headers.get('retry-after'), null, 'only busy carries retry-after');
  await until(() => blind.settler.settled.length === 1, 'the settle');
  t.same(blind.settler.settled[0], { lease, status: 503, error: 'guard_unverified' }, 'settled, not metered');
  t.equal((await fetch(`${blind.admin}/healthz/ready`)).status, 503);
  t.equal((await fetch(`${blind.admin}/healthz/live`)).status, 200);
  t.equal(blind.pool.selfTestPassed(), false);
});
