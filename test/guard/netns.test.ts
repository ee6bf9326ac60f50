/**
 * Canaries on private addresses that are not loopback (docs/architecture.md §7: "never reach a listener the
 * test runs on a private address"): the cloud metadata address 169.254.169.254 on port 80, a
 * private-use 10.200.0.1, a CGNAT 100.64.0.9 and a unique-local fd00:200::1, held by the
 * loopback device of a network namespace this test creates (as root, `unshare --net`), so
 * nothing is added to the machine's own interfaces. The file re-runs itself inside the
 * namespace; the guard, the DNS server, the canaries and Chromium all live there.
 *
 * GUARD_ALLOW_CIDRS: the pages are served from this test's own server on 127.0.0.5, opened
 * with allowCidrs ['127.0.0.5/32'] for that server only.
 */
import { execFileSync } from 'node:child_process';
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { createLogger } from '../../lib/log.ts';
import { createGuard } from '../../guard/index.ts';
import { NXDOMAIN, startDnsServer, type Zone } from './dns-server.ts';
import {
  closeServer,
  connectVia,
  eventually,
  guardedContext,
  launchChromium,
  listenOn,
  startCanary,
  touch,
  viaGuard,
  type Canary,
} from './helpers.ts';
import { GUARD_REASON_HEADER } from '../../lib/guard-contract.ts';

const INSIDE = 'TINTYPE_GUARD_TEST_NETNS';

if (process.env[INSIDE] !== '1') {
  t.spawn(
    'unshare',
    ['--net', '--', process.execPath, ...process.execArgv, fileURLToPath(import.meta.url)],
    { env: { ...process.env, [INSIDE]: '1' } },
    'inside a network namespace of its own',
  );
} else {
  await inside();
}

async function inside(): Promise<void> {
  const ip = (...args: string[]): void => {
    execFileSync('ip', args, { stdio: 'inherit' });
  };
  // The namespace's own loopback device holds the canary addresses (this kernel has no dummy
  // interfaces); it is private to the namespace, so the machine's interfaces are untouched.
  ip('link', 'set', 'lo', 'up');
  for (const a of ['10.200.0.1/32', '169.254.169.254/32', '100.64.0.9/32']) ip('addr', 'add', a, 'dev', 'lo');
  ip('-6', 'addr', 'add', 'fd00:200::1/128', 'dev', 'lo', 'nodad');
  // Routed to the namespace's loopback but held by no address: a SYN there is never answered.
  ip('route', 'add', '10.99.0.0/16', 'dev', 'lo');

  const PAGE_HOST = '127.0.0.5';
  const zone: Zone = (name, type) => {
    const a = (addresses: string[]) => ({ addresses: type === 'A' ? addresses : [] });
    if (name === 'page.test') return a([PAGE_HOST]);
    if (name === 'metadata.test') return a(['169.254.169.254']);
    if (name === 'mixed.test') return a([PAGE_HOST, '10.200.0.1']);
    if (name === 'ula.test') return { addresses: type === 'AAAA' ? ['fd00:200::1'] : [] };
    return { rcode: NXDOMAIN };
  };
  const dns = await startDnsServer(zone);
  const metadata = await startCanary('169.254.169.254', 80);
  const privateUse = await startCanary('10.200.0.1');
  const cgnat = await startCanary('100.64.0.9');
  const ula = await startCanary('fd00:200::1');
  const canaries: Canary[] = [metadata, privateUse, cgnat, ula];
  const leaks = (): number => canaries.reduce((n, c) => n + c.accepted(), 0);

  const pages = http.createServer((req, res) => {
    const path = req.url ?? '/';
    if (path === '/to-metadata') {
      res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/', 'content-length': '0' }).end();
      return;
    }
    const body: Record<string, string> = {
      '/fetch': `<script>fetch('http://10.200.0.1:${privateUse.port}/x', { mode: 'no-cors' }).catch(() => {});</script>`,
      '/img': `<img src="http://[fd00:200::1]:${ula.port}/i.png">`,
      '/iframe': `<iframe src="http://100.64.0.9:${cgnat.port}/"></iframe>`,
      '/fetch-by-name': `<script>fetch('http://metadata.test/latest/meta-data/', { mode: 'no-cors' }).catch(() => {});</script>`,
    };
    res.writeHead(body[path] === undefined ? 404 : 200, { 'content-type': 'text/html' });
    res.end(body[path] ?? 'no such page');
  });
  const pagePort = await listenOn(pages, PAGE_HOST);

  const logger = createLogger('guard', { sink: () => {} });
  const guard = createGuard({ port: 0, dnsServers: [dns.server], allowCidrs: [`${PAGE_HOST}/32`], logger });
  const background = createGuard({ port: 0, dnsServers: [dns.server], logger });
  await guard.start();
  await background.start();
  const port = guard.address().port!;
  const browser = await launchChromium(`http://127.0.0.1:${background.address().port}`);
  t.teardown(async () => {
    await browser.close();
    await guard.stop();
    await background.stop();
    await closeServer(pages);
    for (const c of canaries) await c.close();
    await dns.close();
  });

  t.test('proxy requests and tunnels to non-loopback private addresses are refused', async (t) => {
    const rows: [string, string][] = [
      ['metadata address', 'http://169.254.169.254/latest/meta-data/'],
      ['metadata, decimal', 'http://2852039166/latest/meta-data/'],
      ['metadata, mapped IPv6', 'http://[::ffff:a9fe:a9fe]/'],
      ['metadata by name', 'http://metadata.test/latest/meta-data/'],
      ['private-use', `http://10.200.0.1:${privateUse.port}/`],
      ['private-use, octal', `http://012.0310.0.1:${privateUse.port}/`],
      ['several answers, one private-use', `http://mixed.test:${privateUse.port}/`],
      ['CGNAT', `http://100.64.0.9:${cgnat.port}/`],
      ['unique-local', `http://[fd00:200::1]:${ula.port}/`],
      ['unique-local by name (AAAA only)', `http://ula.test:${ula.port}/`],
    ];
    for (const [scenario, url] of rows) {
      const a = await viaGuard({ port }, url);
      t.equal(`${a.status} ${a.headers[GUARD_REASON_HEADER]}`, '403 private_address', scenario);
    }
    for (const authority of ['169.254.169.254:80', `10.200.0.1:${privateUse.port}`, `[fd00:200::1]:${ula.port}`, 'metadata.test:80']) {
      const a = await connectVia(port, authority);
      t.equal(`${a.status} ${a.headers[GUARD_REASON_HEADER]}`, '403 private_address', `CONNECT ${authority}`);
    }
    t.equal(leaks(), 0);
  });

  t.test('Chromium behind the guard reaches none of them', async (t) => {
    for (const path of ['/to-metadata', '/fetch', '/img', '/iframe', '/fetch-by-name']) {
      const before = guard.unnamedTally().blocked;
      const context = await guardedContext(browser, `http://127.0.0.1:${port}`);
      try {
        const page = await context.newPage();
        await page.goto(`http://page.test:${pagePort}${path}`, { waitUntil: 'load', timeout: 15_000 }).catch(() => undefined);
        t.ok(await eventually(() => guard.unnamedTally().blocked > before), `${path}: refused by the guard`);
      } finally {
        await context.close();
      }
      t.equal(leaks(), 0, `${path}: no canary saw a connection`);
    }
  });

  t.test('GUARD_CONNECT_TIMEOUT_MS: a target that never answers the SYN is a 504, not a refusal', async (t) => {
    // GUARD_ALLOW_CIDRS opens 10.99.0.0/16 here on purpose: the address must pass to be dialled.
    const slow = createGuard({ port: 0, allowCidrs: ['10.99.0.0/16'], connectTimeoutMs: 300, logger });
    await slow.start();
    t.teardown(() => slow.stop());
    const p = slow.address().port!;
    const a = await viaGuard({ port: p }, 'http://10.99.0.1/');
    t.equal(a.status, 504);
    t.equal(a.headers[GUARD_REASON_HEADER], undefined);
    const c = await connectVia(p, '10.99.0.1:443');
    t.equal(c.status, 504, 'a tunnel too');
    t.equal(slow.unnamedTally().blocked, 0, 'neither is counted as a refusal');
  });

  t.test('the canaries received zero connections, and each counts one when touched', async (t) => {
    t.equal(leaks(), 0);
    for (const c of canaries) await touch(c.host, c.port);
    t.ok(await eventually(() => canaries.every((c) => c.accepted() === 1)), 'every canary is reachable from inside the namespace');
  });
}
