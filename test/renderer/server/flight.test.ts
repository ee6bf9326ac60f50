/**
 * One render per key at a time (renderer/cache/flight.ts, docs/architecture.md §3 "One render per
 * key"): identical misses that arrive together render once, on one renderer or across two on one
 * Redis; the others are answered from the entry that render left, as hits with the same bytes,
 * each settled as its own metered call. Real Chromium, the machine's Redis.
 */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import t, { type Test } from 'tap';
import { FileCache, RedisCache } from '../../../renderer/cache/index.ts';
import { CACHE_HEADER } from '../../../renderer/server/answer-headers.ts';
import { post, startHarness, startSite, until, type Answer, type Harness } from './harness.ts';

/** How long the page's image takes: every identical call arrives while the first one renders. */
const SLOW_MS = 1_500;
const site = await startSite((req, res) => {
  setTimeout(() => {
    res.writeHead(200, { 'content-type': 'image/svg+xml' });
    res.end(`<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"><text>${(req.url ?? '').length}</text></svg>`);
  }, SLOW_MS);
});
t.teardown(() => site.close());

interface Page { body: unknown; image: string }
/** A page no one asked for before, whose load waits for a slow image of its own. */
function slowPage(): Page {
  const image = `/slow-${randomBytes(6).toString('hex')}.svg`;
  return { body: { html: `<p>${image}</p><img src="${site.origin}${image}">`, width: 40, height: 30 }, image };
}

function outcomes(t: Test, page: Page, answers: Answer[], harnesses: Harness[]): void {
  t.same([...new Set(answers.map((a) => a.status))], [200], 'every call 200');
  const cache = answers.map((a) => a.headers.get(CACHE_HEADER));
  t.equal(cache.filter((c) => c === 'miss').length, 1, 'rendered once: one miss');
  t.equal(cache.filter((c) => c === 'hit').length, answers.length - 1, 'the others answered from its entry: hits');
  t.ok(answers.every((a) => a.body.equals(answers[0]!.body)), 'the same bytes');
  const settles = harnesses.flatMap((h) => h.settler.settled);
  t.equal(settles.length, answers.length, 'each call settled once');
  t.same(settles.filter((s) => s.cache === 'miss').length, 1, 'one settled as a miss, the rest as hits');
  t.equal(site.hits.get(page.image), 1, 'the page loaded once: its image was fetched once');
}

t.test('one renderer: 20 identical misses at once render once', async (t) => {
  const h = await startHarness({ cache: (dir, logger) => new FileCache({ dir: path.join(dir, 'cache'), maxBytes: 50_000_000, logger }) });
  t.teardown(() => h.close());
  const page = slowPage();
  const answers = await Promise.all(Array.from({ length: 20 }, () => post(h, 'html-to-image', page.body)));
  await until(() => h.settler.settled.length === 20, 'every settle');
  outcomes(t, page, answers, [h]);
});

t.test('two renderers on one Redis: 100 identical misses at once render once', async (t) => {
  const prefix = `tintype-test:${process.pid}:${randomBytes(4).toString('hex')}:`;
  const caches: RedisCache[] = [];
  const start = (): Promise<Harness> => startHarness({
    cache: (_dir, logger) => {
      const c = new RedisCache({ url: 'redis://127.0.0.1:6379', logger, keyPrefix: prefix });
      caches.push(c);
      return c;
    },
  });
  const renderers = [await start(), await start()];
  t.teardown(async () => {
    await caches[0]?.clearPrefix();
    for (const h of renderers) await h.close();
  });
  const page = slowPage();
  const answers = await Promise.all(Array.from({ length: 100 }, (_, i) => post(renderers[i % 2]!, 'html-to-image', page.body)));
  await until(() => renderers.reduce((n, h) => n + h.settler.settled.length, 0) === 100, 'every settle');
  outcomes(t, page, answers, renderers);
});
