/**
 * The renderer's HTTP answers that need no browser, through the real server on a real pool
 * (spec Part 4, Part 7, docs/architecture.md §2 settle): every validation rule and its message, content
 * types and non-JSON bodies, the 413 bound, guard refusals as 422 with their reason, the
 * lease, 404/405, ping, and the admin listener. None of these may use a render slot, and each
 * settles once, unmetered (400, 422) or metered (ping 200).
 */
import http from 'node:http';
import t from 'tap';
import { LEASE_HEADER, MAX_BODY_BYTES, settleIsMetered, type Operation } from '../../../lib/policy-contract.ts';
import { otherLeaseKeys, signedLease } from '../../lib/leases.ts';
import { get, newLease, post, startHarness, until } from './harness.ts';

const h = await startHarness();
t.teardown(() => h.close());
const A = 'https://example.com/';

interface Row {
  name: string;
  body: unknown;
  /** Exactly these failing paths. */
  paths: string[];
  /** A fragment of the message (the message of the whole report). */
  message: string;
}

const rows: Record<'screenshot' | 'html-to-image' | 'pdf', Row[]> = {
  screenshot: [
    { name: 'url missing', body: {}, paths: ['url'], message: 'url is required' },
    { name: 'url empty', body: { url: '' }, paths: ['url'], message: 'url must be at least 1 character' },
    { name: 'url 2049 characters', body: { url: A + 'a'.repeat(2049 - A.length) }, paths: ['url'], message: 'url must be at most 2048 characters' },
    { name: 'url not absolute', body: { url: 'example.com/x' }, paths: ['url'], message: 'url must be an absolute URL' },
    { name: 'url a number', body: { url: 7 }, paths: ['url'], message: 'url must be a string' },
    { name: 'width 0', body: { url: A, width: 0 }, paths: ['width'], message: 'width must be at least 1' },
    { name: 'width 2001', body: { url: A, width: 2001 }, paths: ['width'], message: 'width must be at most 2000' },
    { name: 'width fractional', body: { url: A, width: 10.5 }, paths: ['width'], message: 'width must be a whole number' },
    { name: 'width as digits (not coerced here)', body: { url: A, width: '100' }, paths: ['width'], message: 'width must be a number' },
    { name: 'height 0', body: { url: A, height: 0 }, paths: ['height'], message: 'height must be at least 1' },
    { name: 'height 2001', body: { url: A, height: 2001 }, paths: ['height'], message: 'height must be at most 2000' },
    { name: 'fullPage a string', body: { url: A, fullPage: 'true' }, paths: ['fullPage'], message: 'fullPage must be a boolean' },
    { name: 'scale 0.99', body: { url: A, deviceScaleFactor: 0.99 }, paths: ['deviceScaleFactor'], message: 'deviceScaleFactor must be at least 1' },
    { name: 'scale 2.01', body: { url: A, deviceScaleFactor: 2.01 }, paths: ['deviceScaleFactor'], message: 'deviceScaleFactor must be at most 2' },
    { name: 'waitUntil networkidle2', body: { url: A, waitUntil: 'networkidle2' }, paths: ['waitUntil'], message: 'waitUntil must be one of load, domcontentloaded, networkidle' },
    { name: 'omitBackground a string', body: { url: A, omitBackground: 'false' }, paths: ['omitBackground'], message: 'omitBackground must be a boolean' },
    { name: 'format gif', body: { url: A, format: 'gif' }, paths: ['format'], message: 'format must be one of png, jpeg' },
    { name: 'quality with png', body: { url: A, quality: 80 }, paths: ['quality'], message: 'quality applies to jpeg only' },
    { name: 'quality with explicit png', body: { url: A, format: 'png', quality: 80 }, paths: ['quality'], message: 'quality applies to jpeg only' },
    { name: 'quality 0', body: { url: A, format: 'jpeg', quality: 0 }, paths: ['quality'], message: 'quality must be at least 1' },
    { name: 'quality 101', body: { url: A, format: 'jpeg', quality: 101 }, paths: ['quality'], message: 'quality must be at most 100' },
    { name: 'unknown field', body: { url: A, delay: 5 }, paths: ['delay'], message: 'delay is not a known field' },
    { name: 'html is not a screenshot field', body: { url: A, html: '<p>' }, paths: ['html'], message: 'html is not a known field' },
    {
      name: 'every failing field at once', body: { width: 0, height: 9999, format: 'bmp', extra: 1 },
      paths: ['url', 'width', 'height', 'format', 'extra'], message: 'url is required',
    },
  ],
  'html-to-image': [
    { name: 'html missing', body: {}, paths: ['html'], message: 'html is required' },
    { name: 'html empty', body: { html: '' }, paths: ['html'], message: 'html must be at least 1 character' },
    { name: 'html 1,000,001 code units', body: { html: 'a'.repeat(1_000_001) }, paths: ['html'], message: 'html must be at most 1000000 characters' },
    { name: 'html a number', body: { html: 5 }, paths: ['html'], message: 'html must be a string' },
    { name: 'width digits with a unit', body: { html: 'x', width: '12px' }, paths: ['width'], message: 'width must be a number or a string of digits' },
    { name: 'width 2001 as digits', body: { html: 'x', width: '2001' }, paths: ['width'], message: 'width must be at most 2000' },
    { name: 'height 0 as digits', body: { html: 'x', height: '0' }, paths: ['height'], message: 'height must be at least 1' },
    { name: 'scale 3 as digits', body: { html: 'x', deviceScaleFactor: '3' }, paths: ['deviceScaleFactor'], message: 'deviceScaleFactor must be at most 2' },
    { name: 'omitBackground "true"', body: { html: 'x', omitBackground: 'true' }, paths: ['omitBackground'], message: 'omitBackground must be a boolean' },
    { name: 'waitUntil unknown', body: { html: 'x', waitUntil: 'idle' }, paths: ['waitUntil'], message: 'waitUntil must be one of' },
    { name: 'url is not an html-to-image field', body: { html: 'x', url: A }, paths: ['url'], message: 'url is not a known field' },
    { name: 'fullPage is not an html-to-image field', body: { html: 'x', fullPage: true }, paths: ['fullPage'], message: 'fullPage is not a known field' },
  ],
  pdf: [
    { name: 'neither url nor html', body: {}, paths: ['url'], message: 'give exactly one of `url` or `html`' },
    { name: 'both url and html', body: { url: A, html: 'x' }, paths: ['url'], message: 'give exactly one of `url` or `html`' },
    { name: 'format A7', body: { html: 'x', format: 'A7' }, paths: ['format'], message: 'format must be one of Letter, Legal, Tabloid, Ledger, A0' },
    { name: 'format lower case', body: { html: 'x', format: 'a4' }, paths: ['format'], message: 'format must be one of' },
    { name: 'landscape a string', body: { html: 'x', landscape: 'yes' }, paths: ['landscape'], message: 'landscape must be a boolean' },
    { name: 'printBackground a number', body: { html: 'x', printBackground: 1 }, paths: ['printBackground'], message: 'printBackground must be a boolean' },
    { name: 'scale 0.09', body: { html: 'x', scale: 0.09 }, paths: ['scale'], message: 'scale must be at least 0.1' },
    { name: 'scale 2.1', body: { html: 'x', scale: 2.1 }, paths: ['scale'], message: 'scale must be at most 2' },
    { name: 'margin a bare number', body: { html: 'x', margin: { top: '10' } }, paths: ['margin.top'], message: 'margin.top must be up to three digits' },
    { name: 'margin in em', body: { html: 'x', margin: { left: '1em' } }, paths: ['margin.left'], message: 'margin.left must be up to three digits' },
    { name: 'margin four digits', body: { html: 'x', margin: { right: '1000px' } }, paths: ['margin.right'], message: 'margin.right must be' },
    { name: 'margin an expression', body: { html: 'x', margin: { bottom: 'calc(1px + 1px)' } }, paths: ['margin.bottom'], message: 'margin.bottom must be' },
    { name: 'margin a JSON number', body: { html: 'x', margin: { top: 10 } }, paths: ['margin.top'], message: 'margin.top must be a string' },
    { name: 'margin unknown side', body: { html: 'x', margin: { middle: '1px' } }, paths: ['margin.middle'], message: 'margin.middle is not a known field' },
    { name: 'margin not an object', body: { html: 'x', margin: '1px' }, paths: ['margin'], message: 'margin must be an object' },
    { name: 'pageRanges with letters', body: { html: 'x', pageRanges: '1-2;3' }, paths: ['pageRanges'], message: 'pageRanges may hold only digits, commas, hyphens and spaces' },
    { name: 'pageRanges 41 characters', body: { html: 'x', pageRanges: '1,'.repeat(20) + '1' }, paths: ['pageRanges'], message: 'pageRanges must be at most 40 characters' },
    { name: 'preferCSSPageSize a string', body: { html: 'x', preferCSSPageSize: 'true' }, paths: ['preferCSSPageSize'], message: 'preferCSSPageSize must be a boolean' },
    { name: 'media tv', body: { html: 'x', media: 'tv' }, paths: ['media'], message: 'media must be one of print, screen' },
    { name: 'waitUntil unknown', body: { html: 'x', waitUntil: 'never' }, paths: ['waitUntil'], message: 'waitUntil must be one of' },
    { name: 'url not absolute', body: { url: '/x' }, paths: ['url'], message: 'url must be an absolute URL' },
    { name: 'html too long', body: { html: 'a'.repeat(1_000_001) }, paths: ['html'], message: 'html must be at most 1000000' },
  ],
};

t.test('every validation rule answers 400 naming each failing field, and uses no browser', async (t) => {
  const before = h.pool.stats().renders;
  const settledBefore = h.settler.settled.length;
  let calls = 0;
  for (const [operation, table] of Object.entries(rows)) {
    for (const row of table) {
      const a = await post(h, operation, row.body);
      calls += 1;
      t.equal(a.status, 400, `${operation} ${row.name}: 400`);
      const body = a.json();
      t.equal(body.success, false, `${operation} ${row.name}: success false`);
      t.same([...new Set(body.error.issues.map((i: { path: string }) => i.path))].sort(), [...row.paths].sort(), `${operation} ${row.name}: paths`);
      t.match(body.error.message, row.message, `${operation} ${row.name}: message`);
      for (const p of row.paths) t.match(body.error.message, p, `${operation} ${row.name}: message names ${p}`);
      t.equal(a.headers.get('content-type'), 'application/json; charset=utf-8');
    }
  }
  t.equal(h.pool.stats().renders, before, 'no render slot was used');
  const settled = (await h.settler.waitFor(settledBefore + calls)).slice(settledBefore);
  t.equal(settled.length, calls, 'each 400 settled once');
  t.ok(settled.every((s) => s.status === 400 && s.error === undefined && !settleIsMetered(s)), 'settled as 400, not metered');
});

t.test('the message never echoes the URL or the HTML', async (t) => {
  const secret = 'zz-secret-marker';
  const a = await post(h, 'screenshot', { url: `${secret}/not-absolute`, quality: 1 });
  t.notMatch(a.body.toString(), secret);
  const b = await post(h, 'pdf', { url: `https://${secret}.example/`, html: `<p>${secret}</p>` });
  t.notMatch(b.body.toString(), secret);
});

t.test('content types and bodies that are not JSON are a 400; past 4 MB a 413', async (t) => {
  const before = h.pool.stats().renders;
  const cases = [
    { name: 'text/plain', contentType: 'text/plain', raw: '{"html":"x"}', status: 400, message: 'content-type: application/json' },
    { name: 'form encoded', contentType: 'application/x-www-form-urlencoded', raw: 'html=x', status: 400, message: 'content-type: application/json' },
    { name: 'a charset JSON does not have', contentType: 'application/json; charset=latin1', raw: '{"html":"x"}', status: 400, message: 'content-type' },
    { name: 'not JSON', contentType: 'application/json', raw: '{"html": ', status: 400, message: 'body is not valid JSON' },
    { name: 'empty', contentType: 'application/json', raw: '', status: 400, message: 'body must be a JSON object' },
    { name: 'a JSON array', contentType: 'application/json', raw: '[{"html":"x"}]', status: 400, message: 'body must be a JSON object' },
    { name: 'a JSON string', contentType: 'application/json', raw: '"x"', status: 400, message: 'body must be a JSON object' },
    { name: 'null', contentType: 'application/json', raw: 'null', status: 400, message: 'body must be a JSON object' },
  ];
  for (const c of cases) {
    const a = await post(h, 'html-to-image', undefined, { contentType: c.contentType, raw: c.raw });
    t.equal(a.status, c.status, `${c.name}: ${c.status}`);
    t.equal(a.json().success, false, `${c.name}: validator report`);
    t.match(a.json().error.message, c.message, `${c.name}: message`);
  }
  const utf8 = await post(h, 'pdf', undefined, { contentType: 'Application/JSON; charset=UTF-8', raw: '{"format":"A4"}' });
  t.equal(utf8.status, 400, 'JSON with charset=utf-8 is read (then fails validation on its own terms)');
  t.match(utf8.json().error.message, 'exactly one');

  const exact = MAX_BODY_BYTES;
  const filler = (n: number) => JSON.stringify({ html: 'a'.repeat(n - '{"html":""}'.length) });
  const at = await post(h, 'html-to-image', undefined, { raw: filler(exact) });
  t.equal(at.status, 400, 'exactly 4,194,304 bytes is read (and fails only the html length)');
  t.same(at.json().error.issues.map((i: { path: string }) => i.path), ['html']);
  const over = await post(h, 'html-to-image', undefined, { raw: filler(exact + 1) });
  t.equal(over.status, 413, 'one byte more is 413');
  t.same(over.json(), { error: 'payload_too_large' });
  t.equal(h.pool.stats().renders, before, 'no render slot was used');
});

t.test('the guard judges the page address: 422 url_rejected with its reason, before any slot', async (t) => {
  const before = h.pool.stats().renders;
  const settledBefore = h.settler.settled.length;
  const rows = [
    { url: 'file:///etc/passwd', reason: 'bad_scheme' },
    { url: 'ftp://example.com/x', reason: 'bad_scheme' },
    { url: 'javascript:alert(1)', reason: 'bad_scheme' },
    { url: 'http://user:pass@example.com/', reason: 'credentials_in_url' },
    { url: 'http://localhost:8080/', reason: 'bad_host' },
    { url: 'http://metadata.internal/', reason: 'bad_host' },
    { url: 'http://127.0.0.1/', reason: 'private_address' },
    { url: 'http://2130706433/', reason: 'private_address' },
    { url: 'http://0x7f.1/', reason: 'private_address' },
    { url: 'http://[::ffff:10.0.0.1]/', reason: 'private_address' },
    { url: 'http://169.254.169.254/latest/meta-data/', reason: 'private_address' },
    { url: 'http://10.0.0.1/', reason: 'private_address' },
  ];
  for (const row of rows) {
    for (const [op, body] of [['screenshot', { url: row.url }], ['pdf', { url: row.url }]] as const) {
      const a = await post(h, op, body);
      t.equal(a.status, 422, `${op} ${row.url}: 422`);
      t.same(a.json(), { error: 'url_rejected', reason: row.reason }, `${op} ${row.url}: ${row.reason}, URL not echoed`);
    }
  }
  t.equal(h.pool.stats().renders, before, 'no render slot was used');
  const settled = (await h.settler.waitFor(settledBefore + rows.length * 2)).slice(settledBefore);
  t.ok(settled.every((s) => s.status === 422 && s.error === 'url_rejected' && !settleIsMetered(s)), '422 settled, not metered');
});

t.test('the lease: only a lease policy signed gets any work done', async (t) => {
  const settledBefore = h.settler.settled.length;
  const rendersBefore = h.pool.stats().renders;
  const body = { html: `<p>lease ${process.pid}</p>`, width: 40, height: 30 };
  const claims = { id: 'lease-made-up-1', keyId: 'key_test', operation: 'html-to-image' as const, expiresAt: Date.now() + 60_000 };
  const rows: Array<[string, string | null]> = [
    ['no lease', null],
    ['not a lease', 'not a lease!'],
    ['a bare lease id, the old form', 'test-lease-1'],
    ['made up, signed with another key', otherLeaseKeys().sign(claims)],
    ['expired', signedLease('html-to-image', { expiresAt: Date.now() - 1 })],
    ['a lease for another operation (ping holds no render place)', signedLease('ping')],
    ['a signed lease with its expiry pushed back', signedLease('html-to-image', { expiresAt: Date.now() - 1 }).replace(/\.(\d+)\./, (_m, e: string) => `.${Number(e) + 3_600_000}.`)],
  ];
  for (const [name, lease] of rows) {
    const a = await post(h, 'html-to-image', body, { lease });
    t.equal(a.status, 401, `${name}: 401`);
    t.same(a.json(), { error: 'unauthorized' }, `${name}: body`);
  }
  t.equal(h.pool.stats().renders, rendersBefore, 'nothing rendered');
  const ping = await get(h, '/v1/ping');
  t.equal(ping.status, 200, 'a signed lease for the operation is served');
  const settled = (await h.settler.waitFor(settledBefore + 1)).slice(settledBefore);
  t.equal(settled.length, 1, 'the 401s settle nothing (there is no lease to settle)');
});

t.test('routes are exact: any other spelling of a route, or a lease for another route, is refused before any work', async (t) => {
  const settledBefore = h.settler.settled.length;
  const rendersBefore = h.pool.stats().renders;
  const html = JSON.stringify({ html: `<p>exact ${process.pid}</p>`, width: 40, height: 30 });
  const rows: Array<[string, string, string, string | null]> = [
    ['no lease, upper-case V1', 'POST', '/V1/html-to-image', null],
    ['no lease, og upper-case V1', 'GET', '/V1/og?template=title&title=x', null],
    ['upper-case V1', 'POST', '/V1/html-to-image', 'html-to-image'],
    ['upper-case operation', 'POST', '/v1/HTML-to-image', 'html-to-image'],
    ['trailing slash', 'POST', '/v1/html-to-image/', 'html-to-image'],
    ['trailing slash on ping', 'GET', '/v1/ping/', 'ping'],
    ['double leading slash', 'POST', '//v1/html-to-image', 'html-to-image'],
    ['double slash inside', 'POST', '/v1//html-to-image', 'html-to-image'],
    ['a percent-encoded letter', 'POST', '/v1/html-to-%69mage', 'html-to-image'],
    ['a percent-encoded letter of v1', 'POST', '/%761/html-to-image', 'html-to-image'],
    ['a percent-encoded slash', 'POST', '/v1%2Fhtml-to-image', 'html-to-image'],
    ['a dot segment', 'POST', '/v1/./html-to-image', 'html-to-image'],
    ['a ping lease on screenshot', 'POST', '/v1/screenshot', 'ping'],
    ['a ping lease on html-to-image', 'POST', '/v1/html-to-image', 'ping'],
    ['a ping lease on pdf', 'POST', '/v1/pdf', 'ping'],
    ['a ping lease on og', 'GET', '/v1/og?template=title&title=x', 'ping'],
    ['a ping lease on html-to-image with a trailing slash', 'POST', '/v1/html-to-image/', 'ping'],
  ];
  for (const [name, method, path, op] of rows) {
    const a = await raw(method, path, op === null ? null : signedLease(op as Operation), method === 'POST' ? html : undefined);
    t.equal(a.status, 401, `${name}: 401`);
    t.same(JSON.parse(a.body), { error: 'unauthorized' }, `${name}: body`);
  }
  t.equal(h.pool.stats().renders, rendersBefore, 'nothing rendered');
  const ping = await get(h, '/v1/ping');
  t.equal(ping.status, 200, 'the exact route with its own lease is served');
  const settled = (await h.settler.waitFor(settledBefore + 1)).slice(settledBefore);
  t.equal(settled.length, 1, 'the refusals settle nothing, so none is metered');
});

/** One request exactly as written (no client normalises the path), with a lease when given. */
function raw(method: string, path: string, lease: string | null, body?: string): Promise<{ status: number; body: string }> {
  const port = Number(new URL(h.base).port);
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (lease !== null) headers[LEASE_HEADER] = lease;
    const req = http.request({ host: '127.0.0.1', port, method, path, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.once('error', reject);
    req.end(body);
  });
}

t.test('a failed settle is retried until it lands, and lands once', async (t) => {
  const lease = newLease('ping');
  const attempts = h.settler.attempts;
  h.settler.failNext(2);
  t.equal((await get(h, '/v1/ping', lease)).status, 200);
  await until(() => h.settler.settled.some((s) => s.lease === lease), 'the third attempt');
  t.equal(h.settler.attempts - attempts, 3, 'two failures, then the settle');
  t.equal(h.settler.settled.filter((s) => s.lease === lease).length, 1, 'recorded once');
});

t.test('ping, unknown paths and methods', async (t) => {
  const lease = newLease('ping');
  const settledBefore = h.settler.settled.length;
  const ping = await get(h, '/v1/ping', lease);
  t.equal(ping.status, 200);
  const body = ping.json();
  t.same(Object.keys(body).sort(), ['app', 'pong', 'version']);
  t.equal(body.pong, true);
  t.equal(body.app, 'tintype');
  t.type(body.version, 'string');
  const [s] = (await h.settler.waitFor(settledBefore + 1)).slice(settledBefore);
  t.same(s, { lease, status: 200 }, 'ping settles metered, with no cache outcome');
  t.equal((await get(h, '/v1/nothing')).status, 401, 'no lease is for a path that names no route');
  t.same((await get(h, '/v1/nothing')).json(), { error: 'unauthorized' });
  t.equal((await get(h, '/v1/screenshot')).status, 405);
  t.same((await get(h, '/v1/pdf')).json(), { error: 'method_not_allowed' });
  t.equal((await post(h, 'ping', {})).status, 405);
});

t.test('admin listener: live, ready once the self-test passed, metrics', async (t) => {
  const live = await fetch(`${h.admin}/healthz/live`);
  t.equal(live.status, 200);
  const ready = await fetch(`${h.admin}/healthz/ready`);
  t.equal(ready.status, 200);
  const metrics = await (await fetch(`${h.admin}/metrics`)).text();
  t.match(metrics, /tintype_renders_total\{[^}]*operation="screenshot"[^}]*outcome="url_rejected"[^}]*\} \d+/);
  t.match(metrics, /tintype_render_slots 2/);
  t.equal((await fetch(`${h.base}/healthz/live`)).status, 401, 'health is not on the public port: nothing there is open');
});
