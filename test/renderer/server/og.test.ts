/**
 * GET /v1/og through the server (spec 4.5, 2.1, Part 7): a 1200×630 PNG with `cache-control:
 * private, max-age=86400` and `x-cache`, no `x-render-blocked`, cached by identical parameters,
 * 400 for a bad query, no browser used; each lease settled once with its cache outcome.
 */
import t from 'tap';
import { createOgDrawer } from '../../../renderer/og/index.ts';
import { get, newLease, pngSize, startHarness, until } from './harness.ts';
import { BLOCKED_HEADER, CACHE_HEADER } from '../../../renderer/server/answer-headers.ts';

const og = createOgDrawer({ threads: 1 });
await og.start();
const h = await startHarness({ og });
t.teardown(async () => {
  await h.close();
  await og.stop();
});

t.test('a card: PNG 1200×630, private cache-control, x-cache miss then hit', async (t) => {
  const before = h.pool.stats().renders;
  const query = `/v1/og?template=title&title=${encodeURIComponent(`Hello ${process.pid}`)}&theme=light`;
  const lease = newLease('og');
  const miss = await get(h, query, lease);
  t.equal(miss.status, 200);
  t.equal(miss.headers.get('content-type'), 'image/png');
  t.equal(miss.headers.get('cache-control'), 'private, max-age=86400');
  t.equal(miss.headers.get(CACHE_HEADER), 'miss');
  t.equal(miss.headers.get(BLOCKED_HEADER), null, 'og makes no network request: no blocked count');
  t.same(pngSize(miss.body), { width: 1200, height: 630 });
  const hitLease = newLease('og');
  const hit = await get(h, `/v1/og?theme=light&title=${encodeURIComponent(`Hello ${process.pid}`)}&template=title`, hitLease);
  t.equal(hit.headers.get(CACHE_HEADER), 'hit', 'identical parameters in another order');
  t.equal(hit.headers.get('cache-control'), 'private, max-age=86400');
  t.ok(hit.body.equals(miss.body));
  const other = await get(h, `/v1/og?template=title&title=${encodeURIComponent(`Hello ${process.pid}`)}&theme=dark`);
  t.equal(other.headers.get(CACHE_HEADER), 'miss', 'another theme is another card');
  t.equal(h.pool.stats().renders, before, 'no browser was used');
  await until(() => h.settler.settled.some((s) => s.lease === hitLease), 'the settles');
  t.same(h.settler.settled.find((s) => s.lease === lease), { lease, status: 200, cache: 'miss' });
  t.same(h.settler.settled.find((s) => s.lease === hitLease), { lease: hitLease, status: 200, cache: 'hit' });
});

t.test('a bad query is a 400 validator report, unmetered', async (t) => {
  const rows = [
    { query: 'template=stat&title=x&statValue=1', fragment: 'template=stat requires statLabel' },
    { query: 'template=title&title=x&statValue=1', fragment: 'template=title does not draw statValue' },
    { query: 'template=poster&title=x', fragment: 'template' },
    { query: 'template=title', fragment: 'title' },
    { query: 'template=title&title=x&api_key=sk_abc', fragment: 'api_key' },
  ];
  for (const row of rows) {
    const lease = newLease('og');
    const a = await get(h, `/v1/og?${row.query}`, lease);
    t.equal(a.status, 400, `${row.query}: 400`);
    t.equal(a.json().success, false);
    t.match(a.json().error.message, row.fragment, `${row.query}: message`);
    await until(() => h.settler.settled.some((s) => s.lease === lease), 'the settle');
    t.same(h.settler.settled.find((s) => s.lease === lease), { lease, status: 400 }, 'settled 400, no cache outcome');
  }
  t.equal((await get(h, '/v1/og?template=title&title=x', null)).status, 401, 'no lease, no card');
});
