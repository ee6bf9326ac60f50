/**
 * The URL fragment and the shared cache (spec Part 8 rule 3): the key drops the fragment, so
 * Chromium must load the address without it too. Otherwise a hash-routed page draws the first
 * caller's fragment, and every caller of the same key is served that picture for 24 hours.
 * The page draws `location.hash` and reports it to the site, which is how the test sees what
 * Chromium loaded.
 */
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { post, startHarness, startSite } from '../server/harness.ts';
import { CACHE_HEADER } from '../../../renderer/server/answer-headers.ts';

const seenHashes: string[] = [];
const site = await startSite((req, res) => {
  const url = new URL(req.url ?? '/', 'http://site');
  if (url.pathname === '/saw') {
    seenHashes.push(url.searchParams.get('hash') ?? '(none)');
    res.writeHead(204);
    return res.end();
  }
  res.writeHead(200, { 'content-type': 'text/html' });
  // Blocks `load` until the hash is reported, so each render's report is in before it answers.
  res.end(`<!doctype html><body style="margin:0;font:40px monospace">
<p id="h"></p>
<script>
  document.getElementById('h').textContent = 'hash=[' + location.hash + ']';
  document.write('<img src="/saw?hash=' + encodeURIComponent(location.hash) + '">');
</script></body>`);
});
const h = await startHarness();
t.teardown(async () => {
  await h.close();
  await site.close();
});

for (const op of ['screenshot', 'pdf'] as const) {
  t.test(`${op}: renders of #AAA, #BBB and the bare URL are one picture, of the bare URL`, async (t) => {
    seenHashes.length = 0;
    const bare = `${site.origin}/hash-routed/${op}/${randomBytes(4).toString('hex')}`;
    const body = (url: string) => (op === 'screenshot' ? { url, width: 400, height: 80 } : { url });
    const first = await post(h, op, body(`${bare}#AAA`));
    const second = await post(h, op, body(`${bare}#BBB`));
    const third = await post(h, op, body(bare));
    t.same([first.status, second.status, third.status], [200, 200, 200]);
    t.same(
      [first.headers.get(CACHE_HEADER), second.headers.get(CACHE_HEADER), third.headers.get(CACHE_HEADER)],
      ['miss', 'hit', 'hit'],
      'the second and third are cache hits',
    );
    t.ok(second.body.equals(first.body) && third.body.equals(first.body), 'byte-identical');
    t.same(seenHashes, [''], 'the one render Chromium made loaded the address without its fragment');
  });
}
