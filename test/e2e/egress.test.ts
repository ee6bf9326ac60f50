/**
 * Egress policy per key through the real service (docs/security.md "Egress policy per key"):
 * `tintype start` (SQLite) with its guard and Chromium, a site on 127.0.0.2 reached by names a
 * local DNS server answers (GUARD_DNS_SERVERS), keys given lists with `tintype keys`, and the
 * audit trail read back with `tintype egress` and on the admin port.
 */
import http from 'node:http';
import t from 'tap';
import path from 'node:path';
import { ADMIN_SOCKET_NAME } from '../../lib/admin.ts';
import { request } from '../policy/http.ts';
import { startDnsServer } from '../guard/dns-server.ts';
import { listenBesideService } from '../lib/listen-beside.ts';
import { BLOCKED_HEADER } from '../../renderer/server/answer-headers.ts';
import { cleanup, json, jsonWith, runTintype, startService } from './service.ts';
import { SITE_ADDRESS } from './site.ts';

// A dozen renders through Chromium and some thirty runs of the command line, each a process of
// its own: longer than the default per-file limit on a shared machine.
t.setTimeout(600_000);

/** Names the DNS server answers with the site's address; anything else is NXDOMAIN. */
const NAMES = ['example.test', 'www.example.test', 'cdn.other.test', 'evil-example.test', 'example.test.evil.test'];
const dns = await startDnsServer((name, type) =>
  NAMES.includes(name) ? (type === 'A' ? { addresses: [SITE_ADDRESS] } : { addresses: [] }) : { rcode: 3 },
);
t.teardown(() => dns.close());

/** Requests the site answered, as `host path` (the Host header names the name Chromium asked for). */
const seen: string[] = [];
const site = http.createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://site');
  seen.push(`${(req.headers.host ?? '').split(':')[0]} ${url.pathname}`);
  if (url.pathname === '/page') {
    const imgs = url.searchParams.getAll('img').map((src) => `<img src="${src}">`).join('');
    res.writeHead(200, { 'content-type': 'text/html' }).end(`<!doctype html><body><h1>egress</h1>${imgs}</body>`);
  } else if (url.pathname === '/redirect') {
    res.writeHead(302, { location: url.searchParams.get('to') ?? '/' }).end();
  } else if (url.pathname === '/img.png') {
    res.writeHead(200, { 'content-type': 'image/png' }).end(Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64'));
  } else {
    res.writeHead(404).end();
  }
});
const port = await listenBesideService(site, SITE_ADDRESS);
t.teardown(() => new Promise<void>((r) => (site.closeAllConnections(), site.close(() => r()))));
const at = (host: string, rest: string): string => `http://${host}:${port}${rest}`;

const svc = await startService({ env: { GUARD_ALLOW_CIDRS: `${SITE_ADDRESS}/32`, GUARD_DNS_SERVERS: dns.server, TINTYPE_SLOTS: '1' } });
t.teardown(async () => {
  await svc.signal('SIGTERM');
  cleanup();
});
const store = { TINTYPE_DATA_DIR: svc.dataDir };

/** A key made with `tintype keys create`, with the egress options given. */
async function keyWith(...egress: string[]): Promise<{ id: string; secret: string; stdout: string }> {
  const r = await runTintype(['keys', 'create', '--plan', 'pro', ...egress], store);
  if (r.code !== 0) throw new Error(r.stderr);
  return { id: /^id: (\S+)$/m.exec(r.stdout)![1]!, secret: /^secret: (\S+)$/m.exec(r.stdout)![1]!, stdout: r.stdout };
}

function screenshot(secret: string, url: string) {
  return svc.call({ method: 'POST', path: '/v1/screenshot', headers: jsonWith(secret), body: JSON.stringify({ url, width: 200, height: 100 }) });
}

/** Rows of a key's trail read with `tintype egress`, once it holds at least `n` (the test's timeout bounds the wait). */
async function trail(keyId: string, n: number, ...more: string[]): Promise<Array<Record<string, unknown>>> {
  for (;;) {
    const r = await runTintype(['egress', '--key', keyId, '--format', 'json', ...more], store);
    if (r.code !== 0) throw new Error(r.stderr);
    const rows = JSON.parse(r.stdout) as Array<Record<string, unknown>>;
    if (rows.length >= n) return rows;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** What a row says apart from its time and render. */
const decided = (r: Record<string, unknown>) => [r['host'], r['port'], r['decision'], r['reason'], r['mode'], r['operation']];

const enforced = await keyWith('--egress-allow', 'example.test,*.example.test');

t.test('keys create and keys list show the policy', async (t) => {
  t.match(enforced.stdout, /^egress: enforce:\*\.example\.test,example\.test$/m);
  const list = await runTintype(['keys', 'list'], store);
  const line = list.stdout.split('\n').find((l) => l.startsWith(enforced.id))!;
  t.equal(line.split('\t').at(-1), 'enforce:*.example.test,example.test');
  t.match(list.stdout.split('\n')[0], /\tegress$/);
});

t.test('enforce: an allowed page renders; a sub-resource from another host is refused and counted', async (t) => {
  const before = seen.length;
  const a = await screenshot(enforced.secret, at('www.example.test', `/page?img=${encodeURIComponent(at('cdn.other.test', '/img.png'))}`));
  t.equal(a.status, 200, a.status === 200 ? 'rendered' : a.body.toString());
  t.equal(a.headers[BLOCKED_HEADER], '1', 'the image from cdn.other.test is counted');
  t.same(seen.slice(before), ['www.example.test /page'], 'nothing reached cdn.other.test');
});

t.test('enforce: a page outside the list is 422 not_allowed_for_key and not metered', async (t) => {
  const used = svc.used(enforced.id);
  const a = await screenshot(enforced.secret, at('cdn.other.test', '/page'));
  t.equal(a.status, 422);
  t.same(json(a), { error: 'url_rejected', reason: 'not_allowed_for_key' });
  await svc.leasesClosed(enforced.id);
  t.equal(svc.used(enforced.id), used, 'no call counted');
  t.equal(svc.ledger(enforced.id).at(-1)?.metered, 0);
});

t.test('enforce: a redirect from an allowed host to another is refused at the hop', async (t) => {
  const before = seen.length;
  const a = await screenshot(enforced.secret, at('example.test', `/redirect?to=${encodeURIComponent(at('cdn.other.test', '/page'))}`));
  t.equal(a.status, 422);
  t.same(json(a), { error: 'url_rejected', reason: 'not_allowed_for_key' });
  t.same(seen.slice(before), ['example.test /redirect'], 'the second hop never reached the site');
});

t.test('enforce: *.example.test matches neither evil-example.test nor example.test.evil.test', async (t) => {
  for (const host of ['evil-example.test', 'example.test.evil.test']) {
    const page = await screenshot(enforced.secret, at(host, '/page'));
    t.same([page.status, json(page)], [422, { error: 'url_rejected', reason: 'not_allowed_for_key' }], `${host} as the page`);
  }
  const before = seen.length;
  const imgs = ['evil-example.test', 'example.test.evil.test'].map((h) => `img=${encodeURIComponent(at(h, '/img.png'))}`).join('&');
  const a = await screenshot(enforced.secret, at('example.test', `/page?${imgs}`));
  t.equal(a.status, 200);
  t.equal(a.headers[BLOCKED_HEADER], '2', 'both look-alikes refused as sub-resources');
  t.same(seen.slice(before), ['example.test /page']);
});

t.test('report: the sub-resource is fetched, and recorded would_refuse', async (t) => {
  const reported = await keyWith('--egress-allow', 'example.test', '--egress-mode', 'report');
  const before = seen.length;
  const a = await screenshot(reported.secret, at('example.test', `/page?report&img=${encodeURIComponent(at('cdn.other.test', '/img.png'))}`));
  t.equal(a.status, 200);
  t.equal(a.headers[BLOCKED_HEADER], '0', 'nothing refused');
  t.same(seen.slice(before).sort(), ['cdn.other.test /img.png', 'example.test /page']);
  const rows = await trail(reported.id, 2);
  t.same(rows.map(decided), [
    ['example.test', port, 'allowed', null, 'report', 'screenshot'],
    ['cdn.other.test', port, 'would_refuse', 'not_allowed_for_key', 'report', 'screenshot'],
  ]);
});

t.test('a policy change holds for the renders that start after it', async (t) => {
  const changing = await keyWith();
  // Each render asks another page: the second and third must not be cache hits of the first.
  const page = (n: number): string => at('example.test', `/page?change=${n}&img=${encodeURIComponent(at('cdn.other.test', '/img.png'))}`);
  const first = await screenshot(changing.secret, page(1));
  t.equal(first.headers[BLOCKED_HEADER], '0', 'no policy: the image is fetched');
  const set = await runTintype(['keys', 'egress', changing.id, '--allow', 'example.test'], store);
  t.equal(set.stdout, `egress of ${changing.id}: enforce:example.test\n`);
  // A lease is granted only on a list read from the store within the last second (policy/egress.ts).
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  const second = await screenshot(changing.secret, page(2));
  t.equal(second.status, 200);
  t.equal(second.headers[BLOCKED_HEADER], '1', 'enforced from the next render on');
  const cleared = await runTintype(['keys', 'egress', changing.id, '--clear'], store);
  t.equal(cleared.stdout, `egress of ${changing.id}: none\n`);
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  const third = await screenshot(changing.secret, page(3));
  t.equal(third.headers[BLOCKED_HEADER], '0', 'cleared: as before');
  const rows = await trail(changing.id, 6);
  t.same(rows.map((r) => [r['host'], r['decision'], r['mode']]), [
    ['example.test', 'allowed', null], ['cdn.other.test', 'allowed', null],
    ['example.test', 'allowed', 'enforce'], ['cdn.other.test', 'refused', 'enforce'],
    ['example.test', 'allowed', null], ['cdn.other.test', 'allowed', null],
  ]);
});

t.test('the audit trail of the enforced key reads back exactly, by CLI and on the admin port', async (t) => {
  const expected = [
    ['www.example.test', port, 'allowed', null, 'enforce', 'screenshot'],
    ['cdn.other.test', port, 'refused', 'not_allowed_for_key', 'enforce', 'screenshot'],
    // The page refused before a slot: recorded by the renderer, as no guard saw it.
    ['cdn.other.test', port, 'refused', 'not_allowed_for_key', 'enforce', 'screenshot'],
    ['example.test', port, 'allowed', null, 'enforce', 'screenshot'],
    ['cdn.other.test', port, 'refused', 'not_allowed_for_key', 'enforce', 'screenshot'],
    ['evil-example.test', port, 'refused', 'not_allowed_for_key', 'enforce', 'screenshot'],
    ['example.test.evil.test', port, 'refused', 'not_allowed_for_key', 'enforce', 'screenshot'],
    ['example.test', port, 'allowed', null, 'enforce', 'screenshot'],
    ['evil-example.test', port, 'refused', 'not_allowed_for_key', 'enforce', 'screenshot'],
    ['example.test.evil.test', port, 'refused', 'not_allowed_for_key', 'enforce', 'screenshot'],
  ];
  const rows = await trail(enforced.id, expected.length);
  // Two sub-resources of one page are judged in the order Chromium asks for them.
  t.same(rows.slice(0, 8).map(decided), expected.slice(0, 8));
  t.same(rows.slice(8).map(decided).sort(), expected.slice(8).sort());
  t.equal(rows.length, expected.length, 'nothing more');
  t.ok(rows.every((r) => typeof r['render'] === 'string' && r['key'] === enforced.id && !String(r['host']).includes('/')));
  const renders = new Set(rows.map((r) => r['render']));
  t.equal(renders.size, 6, 'six calls, each its own render id');

  const refused = await trail(enforced.id, 7, '--decision', 'refused');
  t.equal(refused.length, 7);
  const csv = await runTintype(['egress', '--key', enforced.id, '--format', 'csv', '--decision', 'allowed'], store);
  t.equal(csv.stdout.split('\r\n')[0], 'time,key,render,operation,host,port,decision,reason,mode');
  t.equal(csv.stdout.trimEnd().split('\r\n').length, 1 + 3);
  const later = await runTintype(['egress', '--key', enforced.id, '--since', new Date(Date.now() + 60_000).toISOString()], store);
  t.equal(later.stdout.trimEnd().split('\n').length, 1, 'a window after everything holds nothing');

  const socket = path.join(svc.dataDir, ADMIN_SOCKET_NAME);
  const admin = await request(socket, 'GET', `/egress?key=${enforced.id}`);
  t.equal(admin.status, 200);
  t.same((JSON.parse(admin.body) as Array<Record<string, unknown>>).map(decided), rows.map(decided), 'the admin socket answers the same');
  t.equal((await request(socket, 'GET', `/egress?key=${enforced.id}&decision=maybe`)).status, 400);
  t.equal((await fetch(`http://127.0.0.1:${svc.adminPort}/egress?key=${enforced.id}`)).status, 404, 'not on the admin port');
  const metrics = await (await fetch(`http://127.0.0.1:${svc.adminPort}/metrics`)).text();
  t.match(metrics, /tintype_guard_egress_decisions_total\{decision="refused",mode="enforce",reason="not_allowed_for_key"\} [1-9]/);
});

t.test('bad lists change nothing and exit 2', async (t) => {
  for (const args of [
    ['keys', 'create', '--plan', 'pro', '--egress-allow', 'exa mple.test'],
    ['keys', 'create', '--plan', 'pro', '--egress-allow', 'example.test', '--egress-mode', 'loose'],
    ['keys', 'create', '--plan', 'pro', '--egress-allow', Array.from({ length: 65 }, (_, i) => `h${i}.test`).join(',')],
    ['keys', 'egress', enforced.id, '--allow', '10.0.0.1'],
    ['keys', 'egress', enforced.id, '--allow', 'a.test', '--clear'],
    ['egress', '--key', enforced.id, '--since', 'yesterday'],
  ]) {
    const r = await runTintype(args, store);
    t.equal(r.code, 2, `${args.join(' ')}: ${r.stderr.trim()}`);
  }
  const list = await runTintype(['keys', 'list'], store);
  t.equal(list.stdout.split('\n').find((l) => l.startsWith(enforced.id))!.split('\t').at(-1), 'enforce:*.example.test,example.test');
});
