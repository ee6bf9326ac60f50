/**
 * How targets are met (spec Part 1 rules 3 and 5, Part 7): the caller's headers never reach the
 * target; a main document redirected to a private address is the same 422 as a refused page
 * address; a target that answers but cannot be rendered, or cannot be reached at all, is 502
 * render_failed; an error page that can be rendered is rendered, also one carrying headers
 * that only the guard may send.
 */
import t from 'tap';
import { post, pngSize, startHarness, startSite } from '../server/harness.ts';
import { GUARD_FAILURE_HEADER, GUARD_REASON_HEADER } from '../../../lib/guard-contract.ts';
import { BLOCKED_HEADER } from '../../../renderer/server/answer-headers.ts';

const seen: Record<string, string | string[] | undefined>[] = [];
const site = await startSite((req, res) => {
  const p = (req.url ?? '/').split('?', 1)[0];
  if (p === '/headers') {
    seen.push({ ...req.headers });
    res.writeHead(200, { 'content-type': 'text/html' });
    return res.end('<!doctype html><p>headers</p>');
  }
  if (p === '/to-private') {
    res.writeHead(302, { location: 'http://10.0.0.7/admin' });
    return res.end();
  }
  if (p === '/to-metadata') {
    res.writeHead(301, { location: 'http://169.254.169.254/latest/meta-data/' });
    return res.end();
  }
  if (p === '/to-site') {
    res.writeHead(302, { location: '/headers' });
    return res.end();
  }
  if (p === '/download') {
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-disposition': 'attachment; filename="x.bin"' });
    return res.end(Buffer.alloc(2048, 1));
  }
  if (p === '/reset') {
    // Takes the request and drops the connection without answering.
    req.socket.resetAndDestroy();
    return;
  }
  if (p === '/posing') {
    // A target posing as the guard: a refusal reason and a failure mark of its own.
    res.writeHead(403, { 'content-type': 'text/html', [GUARD_REASON_HEADER]: 'private_address', [GUARD_FAILURE_HEADER]: 'connect_refused' });
    return res.end('<!doctype html><h1>Forbidden by the target</h1>');
  }
  if (p === '/error') {
    res.writeHead(500, { 'content-type': 'text/html' });
    return res.end('<!doctype html><h1>Internal error</h1>');
  }
  res.writeHead(404).end();
});
// An allowed address where nothing listens: a site that was started and closed again.
const gone = await startSite(() => {});
await gone.close();
const h = await startHarness();
t.teardown(async () => {
  await h.close();
  await site.close();
});

t.test("the caller's headers never reach the target", async (t) => {
  const secret = 'sk_live_callersecret123456';
  for (const op of ['screenshot', 'pdf'] as const) {
    seen.length = 0;
    const a = await post(h, op, { url: `${site.origin}/headers` }, {
      headers: { authorization: `Bearer ${secret}`, cookie: 'session=caller', 'x-api-key': secret, 'x-forwarded-for': '203.0.113.9' },
    });
    t.equal(a.status, 200, `${op}: 200`);
    t.equal(seen.length, 1, `${op}: the target was fetched once`);
    const got = seen[0]!;
    t.equal(got.authorization, undefined, `${op}: no authorization`);
    t.equal(got.cookie, undefined, `${op}: no cookie`);
    t.equal(got['x-api-key'], undefined, `${op}: no x-api-key`);
    t.equal(got['x-forwarded-for'], undefined, `${op}: no x-forwarded-for`);
    t.equal(got['proxy-authorization'], undefined, `${op}: the render token stays between relay and guard`);
    t.notMatch(JSON.stringify(got), secret, `${op}: the secret appears nowhere`);
  }
});

t.test('a redirect of the main document to a private address is 422 url_rejected', async (t) => {
  for (const [path, reason] of [['/to-private', 'private_address'], ['/to-metadata', 'private_address']] as const) {
    for (const op of ['screenshot', 'pdf'] as const) {
      const a = await post(h, op, { url: `${site.origin}${path}` });
      t.equal(a.status, 422, `${op} ${path}: 422`);
      t.same(a.json(), { error: 'url_rejected', reason }, `${op} ${path}: body without the URL`);
    }
  }
  const ok = await post(h, 'screenshot', { url: `${site.origin}/to-site`, width: 30, height: 20 });
  t.equal(ok.status, 200, 'a redirect to an allowed address renders');
  t.same(pngSize(ok.body), { width: 30, height: 20 });
});

t.test('a target that answers but cannot be rendered is 502 render_failed', async (t) => {
  // A download: the target answered, but there is no page to capture.
  for (const path of ['/download']) {
    for (const op of ['screenshot', 'pdf'] as const) {
      const a = await post(h, op, { url: `${site.origin}${path}` });
      t.equal(a.status, 502, `${op} ${path}: 502`);
      t.same(a.json(), { error: 'render_failed' }, `${op} ${path}: body`);
    }
  }
  const settled = h.settler.settled.filter((s) => s.status === 502);
  t.ok(settled.every((s) => s.error === 'render_failed'), 'settled as render_failed (metered)');
});

t.test('a target that cannot be reached is 502 render_failed, not a picture of the guard\'s answer', async (t) => {
  // Over http the guard answers in the target's place (502/504 with x-guard-failure), and
  // Chromium would render that text as the page; the renderer turns it into the error.
  const before = h.settler.settled.length;
  for (const [what, url] of [['refused', `${gone.origin}/`], ['reset', `${site.origin}/reset`]] as const) {
    for (const op of ['screenshot', 'pdf'] as const) {
      const a = await post(h, op, { url });
      t.equal(a.status, 502, `${op} ${what}: 502`);
      t.same(a.json(), { error: 'render_failed' }, `${op} ${what}: body`);
    }
  }
  const settled = await h.settler.waitFor(before + 4);
  t.same(
    settled.slice(before).map((s) => [s.status, s.error]),
    Array.from({ length: 4 }, () => [502, 'render_failed']),
    'settled as render_failed (metered)',
  );
});

t.test("a target's own x-guard-reason or x-guard-failure is its page, rendered", async (t) => {
  for (const op of ['screenshot', 'pdf'] as const) {
    const a = await post(h, op, { url: `${site.origin}/posing` });
    t.equal(a.status, 200, `${op}: 200, neither a refusal nor a failure`);
    if (op === 'screenshot') t.equal(a.headers.get(BLOCKED_HEADER), '0', 'nothing was refused');
  }
});

t.test('markup whose render fails because of a refusal is 422, never 502', async (t) => {
  // The refresh navigates the page to a refused address; when that lands while Chromium prints,
  // printing fails. Whether it lands in time varies, so each try is either a 200 that counts the
  // refusal or a 422 with its reason, and never a metered 502.
  for (let i = 0; i < 6; i++) {
    const a = await post(h, 'pdf', { html: `<meta http-equiv="refresh" content="0;url=http://10.0.0.1/"><!-- ${i} -->` });
    if (a.status === 200) t.equal(a.headers.get(BLOCKED_HEADER), '1', `try ${i}: 200 counting the refusal`);
    else t.same([a.status, a.json()], [422, { error: 'url_rejected', reason: 'private_address' }], `try ${i}: 422`);
  }
  const shot = await post(h, 'html-to-image', { html: '<script>location.href="http://10.0.0.1/"</script>', width: 20, height: 20 });
  t.equal(shot.status, 200, 'a refusal that does not fail the render is only counted');
  t.equal(shot.headers.get(BLOCKED_HEADER), '1');
});

t.test('an error page the target answers with is rendered as it is', async (t) => {
  const a = await post(h, 'screenshot', { url: `${site.origin}/error`, width: 40, height: 30 });
  t.equal(a.status, 200);
  t.same(pngSize(a.body), { width: 40, height: 30 });
});
