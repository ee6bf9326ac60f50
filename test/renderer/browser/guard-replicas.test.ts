/**
 * Two guards behind one name, as the chart runs them (docs/helm.md "Install";
 * docs/architecture.md §2 "guard"): in `pod` isolation a renderer whose `GUARD_URL` names a host
 * that resolves to two guards (real guards, on 127.0.0.1 and 127.0.0.2 at one port; the name
 * resolved through the pool's resolver seam, every answer in an order of its own as a cluster's
 * DNS gives a headless Service's) keeps each render to one of them. Each guard keeps the tallies of
 * what it judged alone, so a render whose connections were spread over both would have its tally
 * read from one only. Every `url` render below (real Chromium, a site on loopback) must answer
 * exactly what the spec says: a document redirected to a private https address 422
 * `url_rejected` / `private_address` (not metered), never a metered 502; a page with refused images
 * 200 with `x-render-blocked` counting every one; and both guards served renders.
 */
import t from 'tap';
import { createGuard, type Guard } from '../../../guard/index.ts';
import { loadConfig } from '../../../lib/config.ts';
import { settleIsMetered } from '../../../lib/policy-contract.ts';
import { createBrowserPool, guardEndpointFromConfig } from '../../../renderer/browser/index.ts';
import { BLOCKED_HEADER } from '../../../renderer/server/answer-headers.ts';
import { TEST_LEASE_ENV, testGuardTokens, testLeaseKeyPair } from '../../lib/leases.ts';
import { post, SITE_HOST, startHarness, startSite } from '../server/harness.ts';
import { quietLogger } from './helpers.ts';

const GUARD_NAME = 'guards.test';
const GUARD_HOSTS = ['127.0.0.1', '127.0.0.2'] as const;
/** Refused images on the busy page, each on a private address of its own. */
const IMAGES = 6;
/** Rounds of one redirect and one image page each, two renders at once. */
const ROUNDS = 8;

const site = await startSite((req, res) => {
  const p = (req.url ?? '/').split('?', 1)[0];
  if (p === '/to-private-https') {
    res.writeHead(302, { location: 'https://10.0.0.7/admin' });
    return res.end();
  }
  if (p === '/images') {
    const images = Array.from({ length: IMAGES }, (_, i) => `<img src="http://10.9.0.${i + 1}/i.png">`).join('');
    res.writeHead(200, { 'content-type': 'text/html' });
    return res.end(`<!doctype html><body>${images}</body>`);
  }
  res.writeHead(404).end();
});
t.teardown(() => site.close());

/** Two guards on one port, one per address, each with its own log lines. */
async function startGuards(): Promise<{ port: number; guards: Array<{ guard: Guard; lines: string[] }> }> {
  const guards: Array<{ guard: Guard; lines: string[] }> = [];
  let port = 0;
  for (const host of GUARD_HOSTS) {
    const lines: string[] = [];
    const guard = createGuard({ host, port, allowCidrs: [`${SITE_HOST}/32`], leasePublicKeys: [testLeaseKeyPair.publicKey], tokens: testGuardTokens, logger: quietLogger(lines), stopGraceMs: 200 });
    await guard.start();
    t.teardown(() => guard.stop());
    port = guard.address().port!;
    guards.push({ guard, lines });
  }
  return { port, guards };
}

/** The requests a guard refused, from its `guard.decision` lines. */
const refusedBy = (lines: string[]): number => lines.filter((l) => l.includes('"guard.decision"') && l.includes('"decision":"refused"')).length;

t.test(`pod isolation, GUARD_URL naming two guards: ${ROUNDS * 2} url renders, each answered from its own guard's tally`, async (t) => {
  const { port, guards } = await startGuards();
  let lookups = 0;
  const config = loadConfig({
    TINTYPE_ISOLATION: 'pod',
    TINTYPE_SLOTS: '2',
    TINTYPE_RENDER_TIMEOUT_MS: '60000',
    GUARD_URL: `http://${GUARD_NAME}:${port}`,
    GUARD_ALLOW_CIDRS: `${SITE_HOST}/32`,
    TINTYPE_LOG_LEVEL: 'error',
    ...TEST_LEASE_ENV,
  });
  const pool = createBrowserPool({
    config,
    logger: quietLogger(),
    guard: guardEndpointFromConfig(config),
    guardLookup: async (host) => {
      if (host !== GUARD_NAME) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
      lookups += 1;
      return lookups % 2 === 0 ? [...GUARD_HOSTS] : [...GUARD_HOSTS].reverse();
    },
  });
  const h = await startHarness({ pool, env: { TINTYPE_ISOLATION: 'pod', TINTYPE_SLOTS: '2', TINTYPE_RENDER_TIMEOUT_MS: '60000' } });
  t.teardown(() => h.close());
  const selfTestRefusals = guards.map((g) => refusedBy(g.lines));

  let n = 0;
  const fresh = (path: string): string => `${site.origin}${path}?render=${(n += 1)}`;
  for (let round = 1; round <= ROUNDS; round++) {
    const [redirect, images] = await Promise.all([
      post(h, 'screenshot', { url: fresh('/to-private-https'), width: 50, height: 50 }),
      post(h, 'screenshot', { url: fresh('/images'), width: 50, height: 50 }),
    ]);
    t.equal(redirect.status, 422, `round ${round}, document redirected to a private address: 422 (${redirect.body.toString().slice(0, 120)})`);
    t.same(redirect.status === 422 ? redirect.json() : undefined, { error: 'url_rejected', reason: 'private_address' }, `round ${round}: the guard's reason`);
    t.equal(images.status, 200, `round ${round}, page with ${IMAGES} refused images: 200`);
    t.equal(images.headers.get(BLOCKED_HEADER), String(IMAGES), `round ${round}: every refused image counted`);
  }

  const settled = await h.settler.waitFor(ROUNDS * 2);
  t.same(settled.filter((s) => s.status === 422).length, ROUNDS, 'every redirect settled 422');
  t.same(settled.filter((s) => settleIsMetered(s) && s.status !== 200), [], 'nothing metered but the 200s');
  const served = guards.map((g, i) => refusedBy(g.lines) - selfTestRefusals[i]!);
  t.equal(served[0]! + served[1]!, ROUNDS * (IMAGES + 1), `the two guards refused ${ROUNDS * (IMAGES + 1)} requests in all (${served.join(' + ')})`);
  t.ok(served.every((s) => s > 0), `both guards served renders (${served.join(', ')} refusals)`);
});
