/**
 * A document redirected to an https address the guard refuses is 422 even when puppeteer has not
 * yet told of the redirected hop when the navigation fails (docs/architecture.md §2 "guard"):
 * puppeteer holds a redirected hop's `request` event back until the 3xx answer's extra-info
 * event arrives, which under load comes after `goto` has rejected. The hops are read from
 * DevTools' own events, in order. The lag is made certain here by a page that never delivers
 * puppeteer's `request` events; the rules on what a failure names are checked on their own.
 */
import type { Page } from 'puppeteer-core';
import t from 'tap';
import { ServiceError } from '../../../lib/errors.ts';
import { failedDocument } from '../../../renderer/operations/document-hops.ts';
import { TUNNEL_FAILED } from '../../../renderer/operations/document-refusal.ts';
import { navigate } from '../../../renderer/operations/page-work.ts';
import { inProcess, startGuard, startPool, startSite } from '../browser/helpers.ts';

/** The page as puppeteer's would be while its `request` events lag: none is delivered. */
function lagging(page: Page): Page {
  return new Proxy(page, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target) as unknown;
      if (prop === 'on' || prop === 'once') {
        return (event: string, handler: (...a: unknown[]) => void) => (event === 'request' ? target : (target as unknown as Record<string, (...a: unknown[]) => Page>)[prop as string]!(event, handler));
      }
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

t.test('what a failed navigation names', async (t) => {
  const err = new Error(`${TUNNEL_FAILED} at http://public.example/go`);
  t.same(failedDocument({ url: 'https://10.0.0.7/admin', errorText: TUNNEL_FAILED }, 'http://public.example/go', err), { url: 'https://10.0.0.7/admin', answered: false, errorText: TUNNEL_FAILED }, 'the last hop seen, with its own error');
  t.same(failedDocument({ url: 'https://10.0.0.7/admin', errorText: undefined }, 'http://public.example/go', err), { url: 'https://10.0.0.7/admin', answered: false, errorText: TUNNEL_FAILED }, 'the last hop seen, with the navigation\'s error when its own did not come');
  t.same(failedDocument(undefined, 'http://public.example/go', err).url, '', 'a tunnel error never names an http hop: no hop is named');
  t.same(failedDocument({ url: 'http://public.example/go', errorText: TUNNEL_FAILED }, 'http://public.example/go', err).url, '', 'nor an http last hop');
  const refused = new Error('net::ERR_CONNECTION_REFUSED at http://public.example/go');
  t.same(failedDocument(undefined, 'http://public.example/go', refused), { url: 'http://public.example/go', answered: false, errorText: 'net::ERR_CONNECTION_REFUSED' }, 'another error names the first hop');
});

for (const isolation of ['netns', 'pod'] as const) {
  t.test(`${isolation}: a redirect to https on a private address is 422 while puppeteer's request events lag`, async (t) => {
    const g = await startGuard(t);
    const site = await startSite(t, {
      '/to-private-https': (_req, res) => {
        res.writeHead(302, { location: 'https://10.0.0.7/admin' });
        res.end();
      },
    });
    const pool = await startPool(t, inProcess(g), { config: { isolation } });
    for (let i = 0; i < 3; i++) {
      const deadline = Date.now() + 30_000;
      const outcome = await pool
        .render({ deadline, run: async (ctx) => navigate({ ...ctx, page: async () => lagging(await ctx.page()) }, `${site.origin}/to-private-https?n=${i}`, 'load', deadline) })
        .then(() => 'rendered', (err: unknown) => (err instanceof ServiceError ? `${err.code} ${JSON.stringify(err.extra)}` : String(err)));
      t.equal(outcome, 'url_rejected {"reason":"private_address"}', `render ${i + 1}: the guard's refusal of the document's https hop`);
    }
  });
}
