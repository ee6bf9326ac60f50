/**
 * 422 `url_rejected` for a url render means the guard refused the page's own document (spec
 * Part 7), and only that: decided from the guard's record of which requests it refused, never
 * from headers a target can write itself (inside a CONNECT tunnel every header is the target's),
 * and never from a refused sub-resource, whatever the page does to its document afterwards.
 * First the decision on its own, fed the guard's own record; then a real Chromium against a TLS
 * target it trusts (a certificate made for the test; certificate errors ignored by this test's
 * browser only).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http2 from 'node:http2';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { RenderTallies } from '../../../guard/tally.ts';
import { GUARD_FAILURE_HEADER, GUARD_REASON_HEADER, REFUSALS_KEPT, refusedRequestName, type RenderTally } from '../../../lib/guard-contract.ts';
import { TUNNEL_FAILED, documentRefusal } from '../../../renderer/operations/document-refusal.ts';
import { SITE_HOST, post, startHarness, startSite, type Harness } from '../server/harness.ts';
import { listenBesideService } from '../../lib/listen-beside.ts';
import { BLOCKED_HEADER } from '../../../renderer/server/answer-headers.ts';

/** The guard's record after it refused `requests` (method, target as on the request line) for one render. */
function recordOf(requests: Array<[string, string]>): RenderTally {
  const tallies = new RenderTallies();
  for (const [method, target] of requests) tallies.refuse('renderTokenForTheTest', 'private_address', refusedRequestName(method, target));
  return tallies.take('renderTokenForTheTest');
}

t.test('the decision, from the guard record', async (t) => {
  const doc = 'http://public.example/page?q=1';
  const tlsDoc = 'https://public.example/page';
  const subResource: [string, string] = ['GET', 'http://10.0.0.1/x.png'];
  const rows: Array<[string, Parameters<typeof documentRefusal>[0], RenderTally | undefined, string | undefined]> = [
    ['http: the guard refused the document (its 403)', { url: doc, answered: true, status: 403 }, recordOf([['GET', doc]]), 'private_address'],
    ['http: a redirect hop the guard refused', { url: 'http://10.0.0.7/admin', answered: true, status: 403 }, recordOf([['GET', 'http://10.0.0.7/admin']]), 'private_address'],
    ['http: the target answered 403 itself; a sub-resource was refused', { url: doc, answered: true, status: 403 }, recordOf([subResource]), undefined],
    ['http: a document answered 200 is never refused', { url: doc, answered: true, status: 200 }, recordOf([['GET', doc]]), undefined],
    ['https: the guard refused the document\'s tunnel', { url: tlsDoc, answered: false, errorText: TUNNEL_FAILED }, recordOf([['CONNECT', 'public.example:443']]), 'private_address'],
    ['https: an answer came through an open tunnel, so from the target', { url: tlsDoc, answered: true, status: 403 }, recordOf([['CONNECT', 'public.example:443']]), undefined],
    ['https: the document was reset after a sub-resource was refused', { url: tlsDoc, answered: false, errorText: 'net::ERR_CONNECTION_RESET' }, recordOf([subResource]), undefined],
    ['https: reset, with a refused tunnel to the same host (a name that changed its answer)', { url: tlsDoc, answered: false, errorText: 'net::ERR_HTTP2_PROTOCOL_ERROR' }, recordOf([['CONNECT', 'public.example:443']]), undefined],
    ['https: the tunnel failed, but the guard refused another host only', { url: tlsDoc, answered: false, errorText: TUNNEL_FAILED }, recordOf([['CONNECT', '10.0.0.1:443']]), undefined],
    ['no record (the guard could not be asked)', { url: doc, answered: true, status: 403 }, undefined, undefined],
    ['a record from a guard that names nothing', { url: doc, answered: true, status: 403 }, { blocked: 1, firstReason: 'private_address', refused: [] }, undefined],
  ];
  for (const [scenario, document, tally, want] of rows) t.equal(documentRefusal(document, tally), want, scenario);

  t.equal(
    documentRefusal({ url: 'HTTP://Public.Example:80/page?q=1#frag', answered: true, status: 403 }, recordOf([['GET', doc]])),
    'private_address',
    'the document is named as the guard names its request line (WHATWG form, no fragment)',
  );
  t.equal(
    documentRefusal({ url: 'https://[::ffff:a00:1]/', answered: false, errorText: TUNNEL_FAILED }, recordOf([['CONNECT', '[::ffff:a00:1]:443']])),
    'private_address',
    'an IPv6 host is named alike on both sides',
  );

  const many = recordOf([...Array.from({ length: REFUSALS_KEPT + 5 }, (_, i): [string, string] => ['GET', `http://10.0.0.1/${i}.png`]), ['GET', doc]]);
  t.equal(many.refused.length, REFUSALS_KEPT, 'the record is bounded');
  t.equal(many.blocked, REFUSALS_KEPT + 6, 'the count is not');
  t.equal(documentRefusal({ url: doc, answered: true, status: 403 }, many), 'private_address', 'the latest refusals are the ones kept');
});

// A TLS target on the test site's address, HTTP/2 (for Early Hints) and HTTP/1.1.
const certDir = mkdtempSync(path.join(os.tmpdir(), 'tintype-tls-'));
execFileSync('openssl', [
  'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1', '-subj', '/CN=tintype test target',
  '-addext', `subjectAltName=IP:${SITE_HOST}`, '-keyout', path.join(certDir, 'key.pem'), '-out', path.join(certDir, 'cert.pem'),
], { stdio: 'ignore' });
const html = (res: http2.Http2ServerResponse, body: string, status = 200, headers: Record<string, string> = {}): void => {
  res.writeHead(status, { 'content-type': 'text/html', ...headers });
  res.end(`<!doctype html><body>${body}</body>`);
};
const tls = http2.createSecureServer(
  { key: readFileSync(path.join(certDir, 'key.pem')), cert: readFileSync(path.join(certDir, 'cert.pem')), allowHTTP1: true },
  (req, res) => {
    const p = req.url;
    if (p === '/plain') return html(res, '<h1>plain</h1>');
    // A target posing as the guard: a refusal reason and a failure mark of its own, on its own page.
    if (p === '/posing') return html(res, '<h1>Forbidden by the target</h1>', 403, { [GUARD_REASON_HEADER]: 'private_address' });
    if (p === '/posing-failure') return html(res, '<h1>Its own 502</h1>', 502, { [GUARD_FAILURE_HEADER]: 'connect_refused' });
    if (p === '/posing-with-refused') {
      return html(res, '<h1>posing</h1><img src="http://10.0.0.1/x.png">', 403, { [GUARD_REASON_HEADER]: 'private_address', [GUARD_FAILURE_HEADER]: 'reset' });
    }
    if (p === '/to-private') {
      res.writeHead(302, { location: 'https://10.0.0.7/admin' });
      return res.end();
    }
    // Early Hints make Chromium fetch a sub-resource (refused) before the document answers; then
    // the document is reset, so the navigation fails after a refusal that was not the document's.
    const hinted = /^\/hint-reset-(https?)$/.exec(p);
    if (hinted !== null) {
      res.writeEarlyHints({ link: `<${hinted[1]}://10.0.0.1/x.png>; rel=preload; as=image` });
      setTimeout(() => (req.stream !== undefined ? req.stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR) : req.socket.destroy()), 300);
      return;
    }
    res.writeHead(404).end();
  },
);
const tlsOrigin = `https://${SITE_HOST}:${await listenBesideService(tls, SITE_HOST)}`;
const site = await startSite((req, res) => {
  if (req.url === '/posing') {
    res.writeHead(403, { 'content-type': 'text/html', [GUARD_REASON_HEADER]: 'private_address' });
    return res.end('<!doctype html><h1>Forbidden by the target</h1><img src="http://10.0.0.1/x.png">');
  }
  res.writeHead(404).end();
});

const h: Harness = await startHarness();
t.teardown(async () => {
  await h.close();
  await site.close();
  await new Promise<void>((resolve) => tls.close(() => resolve()));
  rmSync(certDir, { recursive: true, force: true });
});
// This test's Chromium accepts the test certificate: certificate errors are ignored browser-wide,
// through the browser's own DevTools target (what puppeteer's acceptInsecureCerts does).
await h.pool.render({
  deadline: Date.now() + 20_000,
  run: async (ctx) => {
    const session = await (await ctx.page()).browser().target().createCDPSession();
    await session.send('Security.setIgnoreCertificateErrors', { ignore: true });
  },
});

/** Renders `url` with both url operations; returns [status, body or blocked header] per operation. */
async function both(url: string): Promise<Array<{ op: string; status: number; error: unknown; blocked: string | null }>> {
  const out = [];
  for (const op of ['screenshot', 'pdf'] as const) {
    const a = await post(h, op, op === 'screenshot' ? { url, width: 60, height: 40 } : { url });
    out.push({ op, status: a.status, error: a.status === 200 ? undefined : a.json(), blocked: a.headers.get(BLOCKED_HEADER) });
  }
  return out;
}

t.test('the test target is reachable over TLS', async (t) => {
  for (const r of await both(`${tlsOrigin}/plain`)) t.equal(r.status, 200, `${r.op}: 200`);
});

t.test("a TLS target's own x-guard-reason and x-guard-failure are its page, rendered and metered", async (t) => {
  const before = h.settler.settled.length;
  for (const r of await both(`${tlsOrigin}/posing`)) t.same([r.status, r.error], [200, undefined], `${r.op}: 403 with x-guard-reason`);
  for (const r of await both(`${tlsOrigin}/posing-failure`)) t.same([r.status, r.error], [200, undefined], `${r.op}: 502 with x-guard-failure`);
  const withRefused = await both(`${tlsOrigin}/posing-with-refused`);
  for (const r of withRefused) t.same([r.status, r.error], [200, undefined], `${r.op}: posing, with a sub-resource really refused`);
  t.equal(withRefused[0]!.blocked, '1', 'the refused sub-resource is counted');
  const settled = await h.settler.waitFor(before + 6);
  t.same(settled.slice(before).map((s) => s.status), [200, 200, 200, 200, 200, 200], 'each settled as a metered 200');
});

t.test('over http, a 403 the target gave beside a refused sub-resource is its page too', async (t) => {
  const results = await both(`${site.origin}/posing`);
  for (const r of results) t.same([r.status, r.error], [200, undefined], `${r.op}: 200`);
  t.equal(results[0]!.blocked, '1');
});

t.test('a document whose tunnel the guard refused is still 422', async (t) => {
  for (const r of await both(`${tlsOrigin}/to-private`)) {
    t.same([r.status, r.error], [422, { error: 'url_rejected', reason: 'private_address' }], `${r.op}: redirect to https://10.0.0.7`);
  }
});

t.test('a refused sub-resource, then a reset document: 502 render_failed (metered), not 422', async (t) => {
  for (const scheme of ['http', 'https']) {
    const before = h.settler.settled.length;
    for (const r of await both(`${tlsOrigin}/hint-reset-${scheme}`)) {
      t.same([r.status, r.error], [502, { error: 'render_failed' }], `${r.op}: preloaded ${scheme} sub-resource refused, then the document reset`);
    }
    const settled = await h.settler.waitFor(before + 2);
    t.same(settled.slice(before).map((s) => [s.status, s.error]), [[502, 'render_failed'], [502, 'render_failed']], 'settled metered');
  }
});
