/**
 * Real Chromium pointed at a real guard (docs/architecture.md §6, §7): every way a page can make
 * the browser fetch something (redirects, iframe, fetch, img, CSS @import, @font-face,
 * WebSocket, EventSource, sendBeacon, a worker's fetch, meta refresh) is refused by the guard
 * and never reaches the canaries the test runs on refused loopback addresses (127.0.0.2 and
 * [::1]; loopback covers 127/8, so no interface has to be added to this machine).
 *
 * Chromium is launched the way the design asks: a launch-level --proxy-server (a second guard,
 * so its own background traffic cannot blur the counts of the pages' guard), --disable-quic, a
 * WebRTC policy that allows no non-proxied UDP, host-resolver rules that resolve nothing
 * locally, and per-context proxyServer + proxyBypassList ['<-loopback>'].
 *
 * GUARD_ALLOW_CIDRS: the pages are served from this test's own server on 127.0.0.5, opened with
 * allowCidrs ['127.0.0.5/32'] for that server only; every other loopback address stays refused.
 */
import http from 'node:http';
import t, { type Test } from 'tap';
import { createLogger } from '../../lib/log.ts';
import { Registry } from '../../lib/metrics.ts';
import { createGuard } from '../../guard/index.ts';
import { NXDOMAIN, startDnsServer, type Zone } from './dns-server.ts';
import { closeServer, eventually, guardedContext, launchChromium, listenOn, startCanary, touch } from './helpers.ts';

const PAGE_HOST = '127.0.0.5';
const CANARY_HOST = '127.0.0.2';

const zone: Zone = (name, type) => {
  const a = (addresses: string[]) => ({ addresses: type === 'A' ? addresses : [] });
  if (name === 'page.test') return a([PAGE_HOST]);
  if (name === 'canary.test') return a([CANARY_HOST]);
  // Several A records, one of them the canary: refused as a whole (rule 4).
  if (name === 'mixed.test') return a([PAGE_HOST, CANARY_HOST]);
  return { rcode: NXDOMAIN };
};

const dns = await startDnsServer(zone);
const canary = await startCanary(CANARY_HOST);
const canary6 = await startCanary('::1');
const C = canary.port;
const C6 = canary6.port;

// Where each scenario sends the browser: names the guard resolves, literals, IPv6.
const CANARY_URLS = {
  name: `http://canary.test:${C}`,
  literal: `http://${CANARY_HOST}:${C}`,
  decimal: `http://2130706434:${C}`,
  v6: `http://[::1]:${C6}`,
  mixed: `http://mixed.test:${C}`,
};

const PAGES: Record<string, string> = {
  '/iframe': `<iframe src="${CANARY_URLS.name}/frame"></iframe>`,
  '/iframe-v6': `<iframe src="${CANARY_URLS.v6}/frame"></iframe>`,
  '/fetch': `<script>fetch('${CANARY_URLS.literal}/f', { mode: 'no-cors' }).catch(() => {});</script>`,
  '/fetch-mixed': `<script>fetch('${CANARY_URLS.mixed}/f', { mode: 'no-cors' }).catch(() => {});</script>`,
  '/fetch-https': `<script>fetch('https://canary.test:${C}/f', { mode: 'no-cors' }).catch(() => {});</script>`,
  '/img': `<img src="${CANARY_URLS.decimal}/i.png">`,
  '/img-v6': `<img src="${CANARY_URLS.v6}/i.png">`,
  '/css-import': `<style>@import url("${CANARY_URLS.name}/a.css");</style><p>x</p>`,
  '/font-face': `<style>@font-face { font-family: Canary; src: url("${CANARY_URLS.literal}/f.woff2"); } p { font-family: Canary; }</style><p>text in the canary font</p>`,
  '/websocket': `<script>try { new WebSocket('ws://canary.test:${C}/socket'); } catch {}</script>`,
  '/websocket-tls': `<script>try { new WebSocket('wss://${CANARY_HOST}:${C}/socket'); } catch {}</script>`,
  '/eventsource': `<script>new EventSource('${CANARY_URLS.name}/events');</script>`,
  '/beacon': `<script>navigator.sendBeacon('${CANARY_URLS.literal}/beacon', 'payload');</script>`,
  '/worker': `<script>new Worker('/worker.js');</script>`,
  '/meta-refresh': `<meta http-equiv="refresh" content="0;url=${CANARY_URLS.name}/refreshed">`,
};
const WORKER = `fetch('${CANARY_URLS.name}/from-worker', { mode: 'no-cors' }).catch(() => {});`;
const REDIRECTS: Record<string, string> = {
  '301': `${CANARY_URLS.name}/moved`,
  '302': `${CANARY_URLS.literal}/found`,
  '307': `${CANARY_URLS.v6}/temporary`,
  '308': `${CANARY_URLS.mixed}/permanent`,
};

const pageRequests: string[] = [];
const pages = http.createServer((req, res) => {
  const path = (req.url ?? '/').split('?')[0]!;
  pageRequests.push(`${req.headers.host} ${path}`);
  const redirect = /^\/redirect\/(\d{3})$/.exec(path);
  if (redirect !== null && REDIRECTS[redirect[1]!] !== undefined) {
    res.writeHead(Number(redirect[1]), { location: REDIRECTS[redirect[1]!]!, 'content-length': '0' });
    res.end();
  } else if (path === '/worker.js') {
    res.writeHead(200, { 'content-type': 'text/javascript' });
    res.end(WORKER);
  } else if (PAGES[path] !== undefined) {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(`<!doctype html><html><head><title>t</title></head><body>${PAGES[path]}</body></html>`);
  } else {
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('no such page');
  }
});
const pagePort = await listenOn(pages, PAGE_HOST);

const registry = new Registry();
const logger = createLogger('guard', { sink: () => {} });
const guard = createGuard({ port: 0, dnsServers: [dns.server], allowCidrs: [`${PAGE_HOST}/32`], logger, metrics: registry });
// Chromium's own traffic (the default context) goes to a guard of its own.
const background = createGuard({ port: 0, dnsServers: [dns.server], logger });
await guard.start();
await background.start();
const proxy = `http://127.0.0.1:${guard.address().port}`;

const browser = await launchChromium(`http://127.0.0.1:${background.address().port}`);

t.teardown(async () => {
  await browser.close();
  await guard.stop();
  await background.stop();
  await closeServer(pages);
  await canary.close();
  await canary6.close();
  await dns.close();
});

const refusals = registry.counter('tintype_guard_refusals_total', '');
const refused = (): number => guard.unnamedTally().blocked;

/** Opens `path` of the page server in a fresh context that uses the guard, and waits for a refusal. */
async function scenario(t: Test, path: string): Promise<void> {
  const before = refused();
  const privateBefore = refusals.get({ reason: 'private_address' });
  const context = await guardedContext(browser, proxy);
  try {
    const page = await context.newPage();
    const pageRequestsBefore = pageRequests.length;
    await page.goto(`http://page.test:${pagePort}${path}`, { waitUntil: 'load', timeout: 15_000 }).catch(() => undefined);
    t.ok(pageRequests.slice(pageRequestsBefore).includes(`page.test:${pagePort} ${path}`), 'the page itself came through the guard');
    t.ok(await eventually(() => refused() > before), 'the guard refused the fetch');
    t.ok(refusals.get({ reason: 'private_address' }) > privateBefore, 'as private_address');
  } finally {
    await context.close();
  }
  t.equal(canary.accepted() + canary6.accepted(), 0, 'no canary saw a connection');
}

for (const code of Object.keys(REDIRECTS)) {
  t.test(`a ${code} redirect to a private address`, (t) => scenario(t, `/redirect/${code}`));
}
for (const path of Object.keys(PAGES)) {
  t.test(`sub-resource: ${path.slice(1)}`, (t) => scenario(t, path));
}

t.test('the canaries received zero connections, and do count one when touched', async (t) => {
  t.equal(canary.accepted(), 0);
  t.equal(canary6.accepted(), 0);
  await touch(CANARY_HOST, C);
  await touch('::1', C6);
  await new Promise((r) => setImmediate(r));
  t.equal(canary.accepted(), 1);
  t.equal(canary6.accepted(), 1);
});
