/**
 * The guard's record of a render is complete before the render's answer is decided (docs/
 * architecture.md §2 "guard"): four renders at once, in both isolations, on a machine that is
 * busy, still answer a document redirected to an https address the guard refuses with 422
 * `private_address` (free), and count every one of a page's refused requests in
 * `x-render-blocked`. Four pages of 500 requests each open more connections to the guard at once
 * than a unix socket's default accept queue holds: every one must still reach the guard and be
 * judged, none given up by the relay as if the target had failed; and the redirected document is
 * known by its last hop as DevTools reports it, however late puppeteer's own events come
 * (document-hops.test.ts makes that lag certain).
 */
import t from 'tap';
import { post, startHarness, startSite } from '../server/harness.ts';
import { BLOCKED_HEADER } from '../../../renderer/server/answer-headers.ts';

/** Refused requests the busy page makes, each to its own private address. */
const REFUSED = 500;
const AT_ONCE = 4;
const ROUNDS = 3;
/** A URL of its own for every render, so none is answered from the cache. */
let renders = 0;
const fresh = (path: string): string => `${site.origin}${path}?render=${(renders += 1)}`;

const BUSY_PAGE = `<!doctype html><body>${Array.from({ length: REFUSED }, (_, i) => `<img src="http://10.${20 + (i >> 8)}.${i & 255}.1/p.png">`).join('')}</body>`;

const site = await startSite((req, res) => {
  const p = (req.url ?? '/').split('?', 1)[0];
  if (p === '/to-private-https') {
    res.writeHead(302, { location: 'https://10.0.0.7/admin' });
    return res.end();
  }
  if (p === '/busy') {
    res.writeHead(200, { 'content-type': 'text/html' });
    return res.end(BUSY_PAGE);
  }
  res.writeHead(404).end();
});
t.teardown(() => site.close());

for (const isolation of ['netns', 'pod'] as const) {
  t.test(`${isolation}: ${AT_ONCE} renders at once`, async (t) => {
    // A render budget long enough for four pages of 500 requests on a machine other work loads:
    // what is checked is what was counted, not how fast.
    const h = await startHarness({ env: { TINTYPE_ISOLATION: isolation, TINTYPE_SLOTS: String(AT_ONCE), TINTYPE_RENDER_TIMEOUT_MS: '120000' } });
    t.teardown(() => h.close());

    await t.test(`pages making ${REFUSED} refused requests beside documents redirected to https on a private address, ${AT_ONCE} at once`, async (t) => {
      for (let round = 1; round <= ROUNDS; round++) {
        // Each round: half the renders are the busy page, half the redirect, all at once.
        const answers = await Promise.all(Array.from({ length: AT_ONCE }, (_, i) =>
          i % 2 === 0
            ? post(h, 'screenshot', { url: fresh('/busy'), width: 50, height: 50 }).then((a) => ({ kind: 'busy', a }))
            : post(h, 'screenshot', { url: fresh('/to-private-https'), width: 50, height: 50 }).then((a) => ({ kind: 'redirect', a }))));
        for (const { kind, a } of answers) {
          if (kind === 'busy') {
            t.equal(a.status, 200, `round ${round}, busy page: 200`);
            t.equal(a.headers.get(BLOCKED_HEADER), String(REFUSED), `round ${round}, busy page: every refusal counted`);
          } else {
            t.equal(a.status, 422, `round ${round}, redirect: 422, not metered (${a.body.toString()})`);
            t.same(a.json(), { error: 'url_rejected', reason: 'private_address' }, `round ${round}, redirect: the guard's reason`);
          }
        }
      }
    });
  });
}
