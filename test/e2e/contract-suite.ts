/**
 * The end-to-end contract, for any deployment (test/e2e/deployment.ts): every row of spec Part 7
 * that a deployment can produce, each answer checked against the OpenAPI document (status,
 * error, extra fields, headers); the ordering of 413 ▸ 401 ▸ 400; concurrency; metering in the
 * usage ledger; traces exported to an OTLP receiver; no key or URL in spans or logs. Real
 * processes and real Chromium; the only pages rendered are the deployment's site, which the
 * guard opens with GUARD_ALLOW_CIDRS. Run by contract.test.ts (`tintype start`) and
 * contract.apart.test.ts (the roles apart).
 */
import t, { type Test } from 'tap';
import { readFileSync } from 'node:fs';
import { openapiJson } from '../../renderer/openapi/document.ts';
import { MAX_BODY_BYTES, RATELIMIT_LIMIT_HEADER, RATELIMIT_REMAINING_HEADER } from '../../lib/policy-contract.ts';
import type { Answer } from '../envoy/client.ts';
import { leasesClosed, ledgerOf, type Deployment } from './deployment.ts';
import { againstDocument, bearer, json, jsonWith } from './service.ts';
import type { Site } from './site.ts';
import type { OtlpReceiver } from './otlp-receiver.ts';
import { BLOCKED_HEADER, CACHE_HEADER } from '../../renderer/server/answer-headers.ts';
import { LIVE_PATH, METRICS_PATH, READY_PATH } from '../../lib/admin.ts';

/** What the suite asks of a deployment it starts. */
export interface ContractSetup {
  renderTimeoutMs: number;
  plans: Record<string, { monthlyQuota: number; perMinute: number; concurrentRenders: number }>;
}

const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47]);
const SETUP: ContractSetup = {
  renderTimeoutMs: 6000,
  plans: {
    burst: { monthlyQuota: 100, perMinute: 2, concurrentRenders: 1 },
    tiny: { monthlyQuota: 2, perMinute: 60, concurrentRenders: 1 },
  },
};
/** A marker in every URL and HTML the tests send, searched for in logs and spans. */
const MARKER = 'e2emarker' + Math.random().toString(36).slice(2, 10);

/** Registers the suite on the test file's root, against the deployment `deploy` starts. */
export function contractSuite(deploy: (o: ContractSetup) => Promise<Deployment>): void {
  let d: Deployment;
  let site: Site;
  let receiver: OtlpReceiver;
  const secrets: string[] = [];

  async function key(plan: string): Promise<{ secret: string; id: string }> {
    const k = await d.key(plan);
    secrets.push(k.secret);
    return k;
  }

  /** Asserts an answer conforms to the document, and returns it. */
  function conforms(t: Test, method: string, path: string, a: Answer, name: string): Answer {
    t.same(againstDocument(method, path, a), [], `${name}: conforms to the OpenAPI document`);
    return a;
  }

  t.before(async () => {
    d = await deploy(SETUP);
    site = d.site;
    receiver = d.receiver;
  });

  t.teardown(async () => {
    await d?.stop();
    await d?.cleanup();
  });

  t.test('start-up: where it listens, how to make a key, no secret', async (t) => {
    for (const re of d.startup.announces) t.match(d.startup.output(), re);
    t.notMatch(d.logs(), /sk_[A-Za-z0-9]/, 'no secret printed');
  });

  t.test('public port: /openapi.json without a key; probes and metrics on the admin port only', async (t) => {
    const doc = await d.call({ path: '/openapi.json' });
    t.equal(doc.status, 200);
    t.match(doc.headers['content-type'], /^application\/json/);
    t.ok(doc.body.equals(openapiJson()), 'the document as built');
    for (const p of [LIVE_PATH, READY_PATH, METRICS_PATH]) {
      const pub = await d.call({ path: p });
      t.equal(pub.status, 404, `${p} is not on the public port`);
    }
    const live = await d.admin(LIVE_PATH);
    t.equal(live.status, 200);
    const ready = await d.admin(READY_PATH);
    t.equal(ready.status, 200, 'ready: guard verified, every role up');
    const metrics = (await d.admin(METRICS_PATH)).body;
    t.match(metrics, /tintype_edge_requests_total/);
    t.match(metrics, /tintype_guard_verified 1/);
  });

  t.test('GET /v1/ping (spec 4.1, 2.3)', async (t) => {
    const k = await key('free');
    const a = conforms(t, 'GET', '/v1/ping', await d.call({ path: '/v1/ping', headers: bearer(k.secret) }), 'ping');
    t.equal(a.status, 200);
    t.same(json(a), { pong: true, app: 'tintype', version: VERSION });
    t.equal(a.headers[RATELIMIT_LIMIT_HEADER], '60');
    t.equal(a.headers[RATELIMIT_REMAINING_HEADER], '59');
    const rows = await ledgerOf(d, k.id, 1);
    t.match(rows, [{ operation: 'ping', status: 200, metered: 1 }], 'metered');
  });

  t.test('401 unauthorized: missing, malformed, unknown and revoked keys get the same answer (spec 5.4)', async (t) => {
    const revoked = await key('free');
    t.equal(await d.revoke(revoked.id), 0, 'revoked');
    const rows: Array<[string, Record<string, string>]> = [
      ['missing', {}],
      ['not bearer', { authorization: 'Basic dXNlcjpwYXNz' }],
      ['empty bearer', { authorization: 'Bearer ' }],
      ['no sk_ prefix', { authorization: 'Bearer pk_0123456789abcdef0123456789' }],
      ['unknown', { authorization: 'Bearer sk_0123456789abcdef0123456789abcdef' }],
      ['revoked', bearer(revoked.secret)],
    ];
    for (const [name, headers] of rows) {
      for (const [method, path] of [['GET', '/v1/ping'], ['GET', '/v1/og?template=title&title=x'], ['POST', '/v1/screenshot']] as const) {
        const a = await d.call({ method, path, headers: { ...headers, 'content-type': 'application/json' }, ...(method === 'POST' ? { body: '{"url":"https://example.com/"}' } : {}) });
        conforms(t, method, path, a, `${name} ${path}`);
        t.equal(a.status, 401, `${name} ${path}`);
        t.same(json(a), { error: 'unauthorized' });
        t.equal(a.headers['www-authenticate'], 'Bearer');
      }
    }
    t.same((await d.ledger(revoked.id)), [], 'nothing written');
    t.equal((await d.used(revoked.id)), 0);
  });

  t.test('a key is never taken from the query string (spec 5.3)', async (t) => {
    const k = await key('free');
    const a = await d.call({ path: `/v1/ping?api_key=${k.secret}` });
    t.equal(a.status, 401);
  });

  t.test('413 payload_too_large before the key; oversized with a bad key is 413, not 401 (spec 5.5)', async (t) => {
    const k = await key('free');
    const big = Buffer.alloc(MAX_BODY_BYTES + 1, 0x20);
    const rows: Array<[string, Record<string, string>, { body?: Buffer; chunkedBytes?: number; stopOnAnswer?: boolean }]> = [
      ['good key, announced', jsonWith(k.secret), { body: big }],
      ['bad key, announced', jsonWith('sk_bad0123456789abcdef0123456789'), { body: big }],
      ['no key, announced', { 'content-type': 'application/json' }, { body: big }],
      ['bad key, chunked', jsonWith('sk_bad0123456789abcdef0123456789'), { chunkedBytes: MAX_BODY_BYTES + 65_536, stopOnAnswer: true }],
    ];
    for (const [name, headers, body] of rows) {
      for (const path of ['/v1/screenshot', '/v1/html-to-image', '/v1/pdf']) {
        const a = await d.call({ method: 'POST', path, headers, ...body });
        conforms(t, 'POST', path, a, `${name} ${path}`);
        t.equal(a.status, 413, `${name} ${path}`);
        t.same(json(a), { error: 'payload_too_large' });
      }
    }
    // The limit itself passes the wall (and then fails validation as JSON: 400, a handler answer).
    const atLimit = await d.call({ method: 'POST', path: '/v1/html-to-image', headers: jsonWith(k.secret), body: Buffer.alloc(MAX_BODY_BYTES, 0x20) });
    t.equal(atLimit.status, 400, 'exactly 4,194,304 bytes is not too large');
    await leasesClosed(d, k.id);
    t.same((await d.ledger(k.id)), [], 'the 413s wrote nothing; the 400 wrote no usage either (docs/architecture.md §6)');
    t.equal((await d.used(k.id)), 0, 'no quota spent');
  });

  t.test('400 validation: bad key first is 401; the report names every failing field; not metered', async (t) => {
    const k = await key('free');
    const bad = await d.call({ method: 'POST', path: '/v1/screenshot', headers: jsonWith('sk_bad0123456789abcdef0123456789'), body: '{"width":"wide"}' });
    t.equal(bad.status, 401, 'a bad key on an invalid body is 401, not 400');
    const rows: Array<[string, string, string, unknown, RegExp]> = [
      ['screenshot quality with png', 'POST', '/v1/screenshot', { url: `${site.base}/page/${MARKER}`, quality: 80 }, /quality applies to jpeg only/],
      ['screenshot two bad fields', 'POST', '/v1/screenshot', { url: '', width: 0, extra: 1 }, /url[\s\S]*width|width[\s\S]*url/],
      ['pdf both url and html', 'POST', '/v1/pdf', { url: `${site.base}/page/${MARKER}`, html: `<p>${MARKER}</p>` }, /exactly one of `url` or `html`/],
      ['pdf neither', 'POST', '/v1/pdf', {}, /exactly one of `url` or `html`/],
      ['html-to-image omitBackground as a string', 'POST', '/v1/html-to-image', { html: 'x', omitBackground: 'true' }, /omitBackground/],
      ['og missing title', 'GET', '/v1/og?template=title', undefined, /template=title requires title/],
      ['og field not drawn', 'GET', '/v1/og?template=stat&title=a&statValue=1&statLabel=b&subtitle=c', undefined, /template=stat does not draw subtitle/],
    ];
    for (const [name, method, path, body, message] of rows) {
      const a = await d.call({ method, path, headers: jsonWith(k.secret), ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
      conforms(t, method, path, a, name);
      t.equal(a.status, 400, name);
      const b = json(a);
      t.equal(b.success, false, `${name}: success false`);
      t.match(JSON.stringify(b.error), message, `${name}: message`);
    }
    await leasesClosed(d, k.id);
    t.same((await d.ledger(k.id)), [], 'every 400 settled, writing no usage');
    t.equal((await d.used(k.id)), 0, 'no quota spent');
  });

  t.test('422 url_rejected with its reason; the URL is never echoed', async (t) => {
    const k = await key('pro');
    const rows: Array<[string, string, string]> = [
      ['loopback', `http://127.0.0.1:9/${MARKER}`, 'private_address'],
      ['metadata address', `http://169.254.169.254/${MARKER}`, 'private_address'],
      ['decimal spelling of loopback', `http://2130706433/${MARKER}`, 'private_address'],
      ['wrapped IPv4', `http://[::ffff:127.0.0.1]/${MARKER}`, 'private_address'],
      ['scheme', `ftp://example.com/${MARKER}`, 'bad_scheme'],
      ['credentials', `http://user:pw@127.0.0.2/${MARKER}`, 'credentials_in_url'],
      ['localhost', `http://localhost/${MARKER}`, 'bad_host'],
      ['internal name', `http://db.internal/${MARKER}`, 'bad_host'],
      ['the service itself', `${d.selfUrl}/${MARKER}`, 'denied_host'],
      ['no such name', `http://${MARKER}.example/`, 'dns_failure'],
    ];
    for (const [name, url, reason] of rows) {
      for (const path of ['/v1/screenshot', '/v1/pdf']) {
        const a = await d.call({ method: 'POST', path, headers: jsonWith(k.secret), body: JSON.stringify({ url }) });
        conforms(t, 'POST', path, a, `${name} ${path}`);
        t.equal(a.status, 422, `${name} ${path}`);
        t.same(json(a), { error: 'url_rejected', reason }, `${name} ${path}: reason`);
        t.notMatch(a.body.toString('utf8'), MARKER, 'URL not echoed');
      }
    }
    const ledger = await ledgerOf(d, k.id, rows.length * 2);
    t.ok(ledger.every((r) => r.status === 422 && r.error === 'url_rejected' && r.metered === 0), '422 settled unmetered');
  });

  t.test('200 renders with their headers; a repeat is a cache hit without x-render-blocked', async (t) => {
    const k = await key('pro');
    // Port 80: Chromium itself refuses some ports (9 is one), which would never reach the guard.
    const blockedImg = `<img src="http://127.0.0.1/${MARKER}.png">`;
    const rows: Array<{ name: string; method: string; path: string; body?: unknown; type: string; magic: Buffer; cacheControl: string; blocked: string | undefined }> = [
      { name: 'screenshot png', method: 'POST', path: '/v1/screenshot', body: { url: `${site.base}/page/${MARKER}`, width: 320, height: 200 }, type: 'image/png', magic: PNG, cacheControl: 'no-store', blocked: '0' },
      { name: 'screenshot jpeg', method: 'POST', path: '/v1/screenshot', body: { url: `${site.base}/page/${MARKER}-j`, width: 320, height: 200, format: 'jpeg', quality: 70 }, type: 'image/jpeg', magic: Buffer.from([0xff, 0xd8]), cacheControl: 'no-store', blocked: '0' },
      { name: 'html-to-image', method: 'POST', path: '/v1/html-to-image', body: { html: `<h1>${MARKER}</h1>`, width: 200, height: 100 }, type: 'image/png', magic: PNG, cacheControl: 'no-store', blocked: '0' },
      { name: 'html-to-image, one refused image', method: 'POST', path: '/v1/html-to-image', body: { html: `<h1>${MARKER}</h1>${blockedImg}`, width: 200, height: 100 }, type: 'image/png', magic: PNG, cacheControl: 'no-store', blocked: '1' },
      { name: 'pdf from html', method: 'POST', path: '/v1/pdf', body: { html: `<h1>${MARKER}</h1>` }, type: 'application/pdf', magic: Buffer.from('%PDF'), cacheControl: 'no-store', blocked: undefined },
      { name: 'pdf from url', method: 'POST', path: '/v1/pdf', body: { url: `${site.base}/page/${MARKER}-p` }, type: 'application/pdf', magic: Buffer.from('%PDF'), cacheControl: 'no-store', blocked: undefined },
      { name: 'pdf, one refused image', method: 'POST', path: '/v1/pdf', body: { html: `<h1>${MARKER}</h1>${blockedImg}` }, type: 'application/pdf', magic: Buffer.from('%PDF'), cacheControl: 'no-store', blocked: '1' },
      { name: 'og', method: 'GET', path: '/v1/og?template=title&title=e2e%20card', type: 'image/png', magic: PNG, cacheControl: 'private, max-age=86400', blocked: undefined },
    ];
    for (const row of rows) {
      for (const cache of ['miss', 'hit']) {
        const name = `${row.name} (${cache})`;
        const a = await d.call({ method: row.method, path: row.path, headers: jsonWith(k.secret), ...(row.body === undefined ? {} : { body: JSON.stringify(row.body) }) });
        conforms(t, row.method, row.path, a, name);
        t.equal(a.status, 200, name);
        t.equal(a.headers['content-type'], row.type, `${name}: content-type`);
        t.ok(a.body.subarray(0, row.magic.length).equals(row.magic), `${name}: the file itself`);
        t.equal(a.headers[CACHE_HEADER], cache, `${name}: x-cache`);
        t.equal(a.headers['cache-control'], row.cacheControl, `${name}: cache-control`);
        t.equal(a.headers[BLOCKED_HEADER], cache === 'hit' ? undefined : row.blocked, `${name}: x-render-blocked`);
        t.equal(a.headers[RATELIMIT_LIMIT_HEADER], '180', `${name}: x-ratelimit-limit`);
        t.ok(a.headers[RATELIMIT_REMAINING_HEADER] !== undefined, `${name}: x-ratelimit-remaining`);
      }
    }
    const ledger = await ledgerOf(d, k.id, rows.length * 2);
    t.same(ledger.map((r) => [r.status, r.cache, r.metered]), rows.flatMap(() => [[200, 'miss', 1], [200, 'hit', 1]]), 'a hit is one metered call, like a miss');
    t.equal((await d.used(k.id)), rows.length * 2);
  });

  t.test('a free key with two renders at once: the second is 429 concurrent_limit', async (t) => {
    const k = await key('free');
    const first = d.call({ method: 'POST', path: '/v1/html-to-image', headers: jsonWith(k.secret), body: JSON.stringify({ html: `<img src="${site.base}/hold/conc.png">`, width: 50, height: 50 }) });
    await site.arrived('conc');
    const second = await d.call({ method: 'POST', path: '/v1/html-to-image', headers: jsonWith(k.secret), body: JSON.stringify({ html: '<p>second</p>', width: 50, height: 50 }) });
    conforms(t, 'POST', '/v1/html-to-image', second, 'second render');
    t.equal(second.status, 429);
    t.same(json(second), { error: 'concurrent_limit', limit: 1 });
    t.ok(second.headers[RATELIMIT_LIMIT_HEADER] !== undefined && second.headers[RATELIMIT_REMAINING_HEADER] !== undefined, 'refusals carry the position');
    const og = await d.call({ path: '/v1/og?template=title&title=also', headers: bearer(k.secret) });
    t.equal(og.status, 429, 'og is a render operation too');
    const ping = await d.call({ path: '/v1/ping', headers: bearer(k.secret) });
    t.equal(ping.status, 200, 'ping is not a render and is not held back');
    site.release('conc');
    t.equal((await first).status, 200, 'the first render completes');
    const ledger = await ledgerOf(d, k.id, 2);
    t.same(ledger.map((r) => [r.operation, r.status]).sort(), [['html-to-image', 200], ['ping', 200]], 'the 429s wrote nothing');
  });

  t.test('every slot taken: 503 busy with retry-after 1; a 400 meanwhile takes no slot', async (t) => {
    const k = await key('pro');
    const other = await key('pro');
    // Every slot of every renderer: one held render per slot, the first by `k`, the others by keys
    // of their own, so no key's concurrency limit is what answers. Where a renderer is picked per
    // connection, a hold can land on a renderer already full and be answered busy; it is sent again.
    const holders = [k];
    while (holders.length < d.slots) holders.push(await key('pro'));
    const held: Array<{ id: string; render: Promise<Answer> }> = [];
    for (let n = 0; held.length < d.slots; n++) {
      const id = `busy-${held.length}-${n}`;
      const render = d.call({ method: 'POST', path: '/v1/html-to-image', headers: jsonWith(holders[held.length]!.secret), body: JSON.stringify({ html: `<img src="${site.base}/hold/${id}.png">`, width: 50, height: 50 }) });
      const first = await Promise.race([site.arrived(id).then(() => 'held' as const), render.then((a) => a)]);
      if (first === 'held') held.push({ id, render });
      else t.equal(first.status, 503, 'a hold that found its renderer full is busy');
    }
    const busy = await d.call({ method: 'POST', path: '/v1/html-to-image', headers: jsonWith(k.secret), body: JSON.stringify({ html: '<p>no slot</p>', width: 50, height: 50 }) });
    conforms(t, 'POST', '/v1/html-to-image', busy, 'busy');
    t.equal(busy.status, 503);
    t.same(json(busy), { error: 'busy' });
    t.equal(busy.headers['retry-after'], '1');
    const invalid = await d.call({ method: 'POST', path: '/v1/screenshot', headers: jsonWith(other.secret), body: JSON.stringify({ width: 5 }) });
    t.equal(invalid.status, 400, 'validation answers while every slot is taken');
    for (const h of held) site.release(h.id);
    const answers = await Promise.all(held.map((h) => h.render));
    t.same(answers.map((a) => a.status), held.map(() => 200));
    await ledgerOf(d, k.id, 1);
    await leasesClosed(d, k.id);
    t.same((await d.ledger(k.id)).map((r) => [r.status, r.metered]), [[200, 1]], 'the 503 wrote no usage; the render one metered row');
    t.equal((await d.used(k.id)), 1);
    await leasesClosed(d, other.id);
    t.same((await d.ledger(other.id)), [], 'the 400 wrote no usage');
    t.equal((await d.used(other.id)), 0, 'and spent no quota');
  });

  t.test('502 render_failed and 504 render_timeout are metered', async (t) => {
    const k = await key('pro');
    const failed = await d.call({ method: 'POST', path: '/v1/screenshot', headers: jsonWith(k.secret), body: JSON.stringify({ url: `${site.base}/download` }) });
    conforms(t, 'POST', '/v1/screenshot', failed, '502');
    t.equal(failed.status, 502);
    t.same(json(failed), { error: 'render_failed' });
    const timeout = await d.call({ method: 'POST', path: '/v1/html-to-image', headers: jsonWith(k.secret), body: JSON.stringify({ html: `<img src="${site.base}/hang.png">`, width: 50, height: 50 }) });
    conforms(t, 'POST', '/v1/html-to-image', timeout, '504');
    t.equal(timeout.status, 504);
    t.same(json(timeout), { error: 'render_timeout' });
    const ledger = await ledgerOf(d, k.id, 2);
    t.same(ledger.map((r) => [r.status, r.error, r.metered]), [[502, 'render_failed', 1], [504, 'render_timeout', 1]]);
    t.equal((await d.used(k.id)), 2);
  });

  t.test('429 rate_limited: the burst window, with retry-after; not metered', async (t) => {
    const k = await key('burst');
    let limited: Answer | undefined;
    let granted = 0;
    // perMinute is 2: within five calls a third one lands in a full window (a window edge can pass at most once).
    for (let i = 0; i < 5 && limited === undefined; i++) {
      const a = await d.call({ path: '/v1/ping', headers: bearer(k.secret) });
      if (a.status === 429) limited = a;
      else granted += 1;
    }
    t.ok(limited, 'a call was refused');
    conforms(t, 'GET', '/v1/ping', limited!, 'rate_limited');
    const b = json(limited!);
    t.equal(b.error, 'rate_limited');
    t.equal(b.limit, 2);
    t.equal(b.windowSec, 60);
    t.ok(b.retryAfterSec >= 1 && b.retryAfterSec <= 60, 'retryAfterSec within the window');
    t.equal(limited!.headers['retry-after'], String(b.retryAfterSec));
    t.equal(limited!.headers[RATELIMIT_LIMIT_HEADER], '2');
    t.equal(limited!.headers[RATELIMIT_REMAINING_HEADER], '0');
    const ledger = await ledgerOf(d, k.id, granted);
    t.equal(ledger.length, granted, 'the refusal wrote nothing');
  });

  t.test('429 quota_exceeded: the monthly quota; not metered', async (t) => {
    const k = await key('tiny');
    for (let i = 0; i < 2; i++) t.equal((await d.call({ path: '/v1/ping', headers: bearer(k.secret) })).status, 200);
    await ledgerOf(d, k.id, 2);
    for (const [method, path] of [['GET', '/v1/ping'], ['GET', '/v1/og?template=title&title=q']] as const) {
      const a = await d.call({ method, path, headers: bearer(k.secret) });
      conforms(t, method, path, a, `quota ${path}`);
      t.equal(a.status, 429);
      const b = json(a);
      const now = new Date();
      const month = `${now.getUTCFullYear()}-${String(now.getUTCMonth() + 1).padStart(2, '0')}`;
      t.match(b, { error: 'quota_exceeded', limit: 2, month });
      t.equal(new Date(b.resetsAt).getTime(), Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1), 'resets at the next UTC month');
    }
    t.equal((await d.ledger(k.id)).length, 2, 'the refusals wrote nothing');
    t.equal((await d.used(k.id)), 2);
  });

  t.test('the usage ledger after a scripted mix equals the metering table, call for call', async (t) => {
    const k = await key('pro');
    const h = jsonWith(k.secret);
    // [what, request, expected row, or a status for "handled, settled, writes nothing" (400: docs/architecture.md §6),
    // or null for "refused before the handler, writes nothing"]
    const script: Array<[string, { method?: string; path: string; headers: Record<string, string>; body?: string | Buffer }, { operation: string; status: number; error: string | null; cache: string | null; metered: number } | number | null]> = [
      ['ping', { path: '/v1/ping', headers: h }, { operation: 'ping', status: 200, error: null, cache: null, metered: 1 }],
      ['html miss', { method: 'POST', path: '/v1/html-to-image', headers: h, body: JSON.stringify({ html: '<b>ledger</b>', width: 40, height: 40 }) }, { operation: 'html-to-image', status: 200, error: null, cache: 'miss', metered: 1 }],
      ['html hit', { method: 'POST', path: '/v1/html-to-image', headers: h, body: JSON.stringify({ height: 40, width: 40, html: '<b>ledger</b>' }) }, { operation: 'html-to-image', status: 200, error: null, cache: 'hit', metered: 1 }],
      ['401', { path: '/v1/ping', headers: bearer('sk_wrong0123456789abcdef0123456789') }, null],
      ['413', { method: 'POST', path: '/v1/pdf', headers: h, body: Buffer.alloc(MAX_BODY_BYTES + 10, 0x20) }, null],
      ['400', { method: 'POST', path: '/v1/pdf', headers: h, body: '{}' }, 400],
      ['422', { method: 'POST', path: '/v1/screenshot', headers: h, body: JSON.stringify({ url: 'http://10.0.0.1/' }) }, { operation: 'screenshot', status: 422, error: 'url_rejected', cache: null, metered: 0 }],
      ['502', { method: 'POST', path: '/v1/screenshot', headers: h, body: JSON.stringify({ url: `${site.base}/download` }) }, { operation: 'screenshot', status: 502, error: 'render_failed', cache: null, metered: 1 }],
      ['og miss', { path: '/v1/og?template=stat&title=t&statValue=42&statLabel=answers', headers: h }, { operation: 'og', status: 200, error: null, cache: 'miss', metered: 1 }],
      ['og hit', { path: '/v1/og?template=stat&title=t&statValue=42&statLabel=answers', headers: h }, { operation: 'og', status: 200, error: null, cache: 'hit', metered: 1 }],
      ['og 400', { path: '/v1/og?template=board&title=t', headers: h }, 400],
      ['pdf', { method: 'POST', path: '/v1/pdf', headers: h, body: JSON.stringify({ html: '<p>ledger</p>' }) }, { operation: 'pdf', status: 200, error: null, cache: 'miss', metered: 1 }],
    ];
    let expected = 0;
    for (const [what, req, row] of script) {
      const a = await d.call(req);
      if (typeof row === 'number') {
        t.equal(a.status, row, what);
        await leasesClosed(d, k.id);
      } else if (row !== null) {
        expected += 1;
        t.equal(a.status, row.status, what);
        const rows = await ledgerOf(d, k.id, expected);
        t.same(rows.at(-1), { ...row, outcome: 'settled' }, `${what}: its ledger row`);
      } else {
        t.ok(a.status === 401 || a.status === 413, `${what}: refused before the handler`);
      }
      t.equal((await d.ledger(k.id)).length, expected, `${what}: ledger length`);
    }
    const metered = script.filter(([, , r]) => typeof r === 'object' && r?.metered === 1).length;
    t.equal((await d.used(k.id)), metered, 'quota spent = metered calls');
  });

  t.test('traces: one trace from the edge through policy and the renderer to the browser work', async (t) => {
    const k = await key('pro');
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const a = await d.call({ method: 'POST', path: '/v1/screenshot', headers: { ...jsonWith(k.secret), traceparent: `00-${traceId}-00f067aa0ba902b7-01` },
      body: JSON.stringify({ url: `${site.base}/page/${MARKER}-trace`, width: 100, height: 100 }) });
    t.equal(a.status, 200);
    const inTrace = async (name: string) => {
      const s = await receiver.waitFor((s) => s.traceId === traceId && s.name === name, 20_000);
      if (s === undefined) throw new Error(`no ${name} span in the trace`);
      return s;
    };
    const edge = await inTrace('edge');
    t.equal(edge.parentSpanId, '00f067aa0ba902b7', "the client's traceparent is the edge span's parent");
    const authz = await inTrace('authz');
    t.equal(authz.parentSpanId, edge.spanId, 'authz (policy) under edge');
    const render = await inTrace('render');
    t.equal(render.parentSpanId, edge.spanId, 'render (renderer) under edge');
    const byId = new Map(receiver.spans.filter((s) => s.traceId === traceId).map((s) => [s.spanId, s]));
    const under = (s: { parentSpanId: string }, ancestor: string): boolean => {
      for (let p = byId.get(s.parentSpanId); p !== undefined; p = byId.get(p.parentSpanId)) if (p.spanId === ancestor) return true;
      return false;
    };
    for (const name of ['cache.lookup', 'slot.wait', 'navigate', 'capture', 'encode', 'cache.store']) {
      const s = await inTrace(name);
      t.ok(under(s, render.spanId), `${name} under render`);
    }
    const settle = await inTrace('settle');
    t.ok(under(settle, edge.spanId), 'settle (policy) in the same trace, under edge');
    // docs/operations.md "Telemetry" names a browser.context span too; its own assertion, so its absence reads as such.
    t.test('browser.context under render (docs/operations.md "Telemetry")', async (t) => {
      const s = await receiver.waitFor((x) => x.traceId === traceId && x.name === 'browser.context', 5_000);
      t.ok(s !== undefined && under(s, render.spanId), 'browser.context span under render');
    });
  });

  t.test('no key, URL or HTML in any exported span, log line or metric', async (t) => {
    // Let the exporter flush what is pending (its delay is 1 s); then search everything.
    await new Promise((r) => setTimeout(r, 1500));
    const exported = receiver.raw.join('\n');
    const logs = d.logs();
    t.ok(exported.length > 0, 'spans were exported');
    t.ok(logs.length > 0, 'logs were written');
    t.notMatch(exported, MARKER, 'no URL or HTML in spans');
    t.notMatch(logs, MARKER, 'no URL or HTML in logs');
    for (const s of secrets) {
      const body = s.slice(3);
      t.notOk(exported.includes(body), 'no key in spans');
      t.notOk(logs.includes(body), 'no key in logs');
    }
    t.notOk(exported.includes(site.base), 'no target address in spans');
    const metrics = (await d.admin(METRICS_PATH)).body;
    t.notMatch(metrics, MARKER, 'no URL or HTML in metrics');
    t.ok(secrets.every((s) => !metrics.includes(s.slice(3))), 'no key in metrics');
  });

  t.test('SIGTERM: exit 0', async (t) => {
    t.equal(await d.stop(), 0);
  });
}
