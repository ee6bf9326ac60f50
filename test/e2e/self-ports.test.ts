/**
 * An address range an operator opens never opens the service itself (docs/security.md, "The guard"):
 * `tintype start` with 127.0.0.2 opened (GUARD_ALLOW_CIDRS) renders a page on 127.0.0.2 that
 * tries every port the process listens on (public, admin, policy, renderer and its admin) at
 * 127.0.0.2 and at a name resolving to it, with images, iframes, fetch and a redirect. Every try
 * is refused and counted in `x-render-blocked`, and no connection reaches the process's
 * listeners at that address (socket-recorder.ts counts what they accept). Also checked: every
 * listener but the public port is bound to 127.0.0.1 only.
 */
import http from 'node:http';
import t from 'tap';
import { startDnsServer } from '../guard/dns-server.ts';
import { cleanup, json, jsonWith, startService } from './service.ts';
import { SITE_ADDRESS } from './site.ts';
import { listenBesideService } from '../lib/listen-beside.ts';
import { BLOCKED_HEADER } from '../../renderer/server/answer-headers.ts';

const SELF_NAME = 'opened-alias.test';

const dns = await startDnsServer((name, type) =>
  name === SELF_NAME && type === 'A' ? { addresses: [SITE_ADDRESS] } : name === SELF_NAME ? { addresses: [] } : { rcode: 3 },
);
t.teardown(() => dns.close());

let page = '';
const redirects: string[] = [];
const site = http.createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://site');
  if (url.pathname === '/attack') {
    res.writeHead(200, { 'content-type': 'text/html' }).end(page);
  } else if (url.pathname === '/redirect') {
    redirects.push(url.searchParams.get('to') ?? '');
    res.writeHead(302, { location: url.searchParams.get('to') ?? '/' }).end();
  } else {
    res.writeHead(404).end();
  }
});
const sitePort = await listenBesideService(site, SITE_ADDRESS);
const siteOrigin = `http://${SITE_ADDRESS}:${sitePort}`;
t.teardown(() => new Promise<void>((r) => (site.closeAllConnections(), site.close(() => r()))));

const svc = await startService({
  recordSockets: true,
  env: { GUARD_ALLOW_CIDRS: `${SITE_ADDRESS}/32`, GUARD_DNS_SERVERS: dns.server, TINTYPE_SLOTS: '1' },
});
t.teardown(async () => {
  await svc.signal('SIGTERM');
  cleanup();
});

t.test('the listeners: the public port on every address, everything else on 127.0.0.1 only', async (t) => {
  const { listening } = svc.sockets();
  const ports = new Set(listening.map((l) => l.port));
  t.ok(ports.size >= 5, 'public, admin, policy, renderer and the renderer\'s admin port');
  for (const l of listening) {
    if (l.port === svc.port) t.match(l.address, /^(::|0\.0\.0\.0)$/, 'the public port listens everywhere');
    else t.equal(l.address, '127.0.0.1', `port ${l.port === svc.adminPort ? '(admin)' : '(internal)'} on loopback only`);
  }
});

t.test('a page on an opened address reaches none of the service\'s ports there', async (t) => {
  const ports = [...new Set(svc.sockets().listening.map((l) => l.port))];
  const targets = ports.flatMap((p) => [`http://${SITE_ADDRESS}:${p}`, `http://${SELF_NAME}:${p}`]);
  page = [
    '<!doctype html><body>',
    ...targets.map((u) => `<img src="${u}/img"><iframe src="${u}/frame"></iframe>` +
      `<img src="${siteOrigin}/redirect?to=${encodeURIComponent(`${u}/redirected`)}">`),
    `<script>for (const u of ${JSON.stringify(targets)}) fetch(u + '/fetch', { mode: 'no-cors' }).catch(() => {});</script>`,
    '</body>',
  ].join('\n');
  const before = svc.sockets().accepted.length;
  const key = await svc.key('pro');
  const answer = await svc.call({
    method: 'POST',
    path: '/v1/screenshot',
    headers: jsonWith(key.secret),
    body: JSON.stringify({ url: `${siteOrigin}/attack`, waitUntil: 'load' }),
  });
  t.equal(answer.status, 200, answer.status === 200 ? 'rendered' : JSON.stringify(json(answer)));
  t.equal(redirects.length, targets.length, 'every redirect was followed to the guard');
  // img, iframe, fetch and the redirect's second hop, for each port by address and by name.
  t.equal(Number(answer.headers[BLOCKED_HEADER]), targets.length * 4, 'every try refused and counted');
  const reached = svc.sockets().accepted.slice(before).filter((a) => a.address.endsWith(SITE_ADDRESS));
  t.same(reached, [], 'no connection reached the process at the opened address');
});
