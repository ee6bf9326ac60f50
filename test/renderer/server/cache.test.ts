/**
 * The render cache through the server, on both backends (spec Part 1 rule 4, 2.1, Part 8
 * rule 3): miss then hit, `x-cache`, no `x-render-blocked` on a hit, the same bytes and type,
 * settle with the cache outcome, and the key rules (field order, defaults applied before
 * hashing, digit strings, URL fragment dropped but query kept, margins, html by content).
 */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import t, { type Test } from 'tap';
import { FileCache, RedisCache } from '../../../renderer/cache/index.ts';
import { newLease, post, startHarness, startSite, until, type Harness } from './harness.ts';
import { BLOCKED_HEADER, CACHE_HEADER } from '../../../renderer/server/answer-headers.ts';

const site = await startSite((req, res) => {
  res.writeHead(200, { 'content-type': 'text/html' });
  res.end(`<!doctype html><p>${(req.url ?? '').length}</p><img src="http://10.20.30.40/x.png">`);
});
t.teardown(() => site.close());

const BLOCKED_HTML = '<p>cached</p><img src="http://10.1.1.1/a.png">';

async function suite(t: Test, h: Harness): Promise<void> {
  t.test('miss, then hit with the same bytes and no x-render-blocked', async (t) => {
    const miss = await post(h, 'html-to-image', { html: BLOCKED_HTML, width: 40, height: 30 });
    t.equal(miss.status, 200);
    t.equal(miss.headers.get(CACHE_HEADER), 'miss');
    t.equal(miss.headers.get(BLOCKED_HEADER), '1');
    const lease = newLease('html-to-image');
    const hit = await post(h, 'html-to-image', { html: BLOCKED_HTML, width: 40, height: 30 }, { lease });
    t.equal(hit.status, 200);
    t.equal(hit.headers.get(CACHE_HEADER), 'hit');
    t.equal(hit.headers.get(BLOCKED_HEADER), null, 'a hit describes no live render');
    t.equal(hit.headers.get('content-type'), 'image/png');
    t.equal(hit.headers.get('cache-control'), 'no-store');
    t.ok(hit.body.equals(miss.body), 'the same bytes');
    await until(() => h.settler.settled.some((x) => x.lease === lease), 'the settle of the hit');
    const s = h.settler.settled.find((x) => x.lease === lease);
    t.same(s, { lease, status: 200, cache: 'hit' }, 'a hit settles as a metered 200 hit');
  });

  t.test('html-to-image key: field order, defaults and digit strings do not matter; options do', async (t) => {
    const html = `<p>${randomBytes(6).toString('hex')}</p>`;
    t.equal((await post(h, 'html-to-image', { html, width: 30, height: 20 })).headers.get(CACHE_HEADER), 'miss');
    const same = [
      { height: 20, width: 30, html },
      { html, width: '30', height: '20' },
      { html, width: 30, height: 20, deviceScaleFactor: 1, omitBackground: false, waitUntil: 'load' },
    ];
    for (const body of same) t.equal((await post(h, 'html-to-image', body)).headers.get(CACHE_HEADER), 'hit', JSON.stringify(Object.keys(body)));
    const different = [
      { html: html + ' ', width: 30, height: 20 },
      { html, width: 31, height: 20 },
      { html, width: 30, height: 20, deviceScaleFactor: 2 },
      { html, width: 30, height: 20, omitBackground: true },
      { html, width: 30, height: 20, waitUntil: 'networkidle' },
    ];
    for (const body of different) t.equal((await post(h, 'html-to-image', body)).headers.get(CACHE_HEADER), 'miss', `differs: ${JSON.stringify(body).slice(0, 60)}`);
  });

  t.test('a lone surrogate and U+FFFD in the same place are different entries', async (t) => {
    // JSON carries the lone surrogate as the escape \ud800; the renderer reads it as that code unit.
    const id = randomBytes(6).toString('hex');
    const first = await post(h, 'html-to-image', { html: `<p>${id}\uD800</p>`, width: 20, height: 20 });
    t.equal(first.headers.get(CACHE_HEADER), 'miss');
    const second = await post(h, 'html-to-image', { html: `<p>${id}\uFFFD</p>`, width: 20, height: 20 });
    t.equal(second.status, 200);
    t.equal(second.headers.get(CACHE_HEADER), 'miss', 'the second render is a miss');
  });

  t.test('screenshot key: fragment dropped, query kept; a hit fetches nothing', async (t) => {
    const id = randomBytes(4).toString('hex');
    const url = `${site.origin}/p${id}?q=1`;
    const first = await post(h, 'screenshot', { url: `${url}#top`, width: 30, height: 20 });
    t.equal(first.headers.get(CACHE_HEADER), 'miss');
    t.equal(first.headers.get(BLOCKED_HEADER), '1');
    const fetched = site.hits.get(`/p${id}`);
    const hit = await post(h, 'screenshot', { width: 30, height: 20, url: `${url}#elsewhere` });
    t.equal(hit.headers.get(CACHE_HEADER), 'hit', 'another fragment is the same entry');
    t.equal(hit.headers.get(BLOCKED_HEADER), null);
    t.equal(site.hits.get(`/p${id}`), fetched, 'the target was not fetched again');
    t.equal((await post(h, 'screenshot', { url, width: 30, height: 20, fullPage: false, format: 'png' })).headers.get(CACHE_HEADER), 'hit', 'defaults spelled out');
    t.equal((await post(h, 'screenshot', { url: `${site.origin}/p${id}?q=2`, width: 30, height: 20 })).headers.get(CACHE_HEADER), 'miss', 'another query is another entry');
    t.equal((await post(h, 'screenshot', { url, width: 30, height: 20, format: 'jpeg' })).headers.get(CACHE_HEADER), 'miss', 'another format');
    const jpegHit = await post(h, 'screenshot', { url, width: 30, height: 20, format: 'jpeg' });
    t.equal(jpegHit.headers.get(CACHE_HEADER), 'hit');
    t.equal(jpegHit.headers.get('content-type'), 'image/jpeg', 'a hit keeps its content type');
    t.equal((await post(h, 'screenshot', { url, width: 30, height: 20, format: 'jpeg', quality: 50 })).headers.get(CACHE_HEADER), 'miss', 'another quality');
  });

  t.test('pdf key: margins and field order, html by content, url and html apart', async (t) => {
    const html = `<p>${randomBytes(6).toString('hex')}</p><img src="http://10.2.2.2/x.png">`;
    const miss = await post(h, 'pdf', { html, margin: { top: '1cm', left: '2mm' }, format: 'A5' });
    t.equal(miss.headers.get(CACHE_HEADER), 'miss');
    t.equal(miss.headers.get(BLOCKED_HEADER), '1');
    const hit = await post(h, 'pdf', { format: 'A5', margin: { left: '2mm', top: '1cm' }, html, landscape: false, media: 'print' });
    t.equal(hit.headers.get(CACHE_HEADER), 'hit');
    t.equal(hit.headers.get(BLOCKED_HEADER), null);
    t.equal(hit.headers.get('content-type'), 'application/pdf');
    for (const body of [
      { html, margin: { top: '1cm', left: '3mm' }, format: 'A5' },
      { html, margin: { top: '1cm', left: '2mm' }, format: 'A5', landscape: true },
      { html, margin: { top: '1cm', left: '2mm' }, format: 'A5', pageRanges: '1' },
      { html, format: 'A5' },
    ]) t.equal((await post(h, 'pdf', body)).headers.get(CACHE_HEADER), 'miss', JSON.stringify(body).slice(-60));
    const url = `${site.origin}/pdf${randomBytes(4).toString('hex')}`;
    t.equal((await post(h, 'pdf', { url })).headers.get(CACHE_HEADER), 'miss');
    t.equal((await post(h, 'pdf', { url: `${url}#x` })).headers.get(CACHE_HEADER), 'hit', 'fragment dropped');
  });
}

t.test('file cache under TINTYPE_DATA_DIR', async (t) => {
  const h = await startHarness({
    cache: (dir, logger) => new FileCache({ dir: path.join(dir, 'cache'), maxBytes: 50_000_000, logger }),
  });
  t.teardown(() => h.close());
  await suite(t, h);
});

t.test('Redis cache (REDIS_URL)', async (t) => {
  let redis: RedisCache | undefined;
  const h = await startHarness({
    cache: (_dir, logger) => (redis = new RedisCache({
      url: 'redis://127.0.0.1:6379', logger, keyPrefix: `tintype-test:${process.pid}:${randomBytes(4).toString('hex')}:`,
    })),
  });
  t.teardown(async () => {
    await redis?.clearPrefix();
    await h.close();
  });
  await suite(t, h);
});
