/**
 * The guard end to end over real sockets (docs/architecture.md §7 rules 1–8): a real guard, a DNS server the
 * test runs on loopback (dns-server.ts) answering what each row needs, a target server and
 * canaries on loopback addresses.
 *
 * GUARD_ALLOW_CIDRS: this test opens 127.0.0.5/32 and 127.0.0.6/32 (allowCidrs below) so that
 * its own target server on 127.0.0.5 stands in for "a public host"; 127.0.0.6 is also named in
 * GUARD_SELF_ADDRESSES to stand in for the service's own public address. Everything else on
 * loopback stays refused, and the canaries on 127.0.0.2 and [::1] must see zero connections.
 */
import http from 'node:http';
import net from 'node:net';
import t from 'tap';
import { GUARD_FAILURE_HEADER, GUARD_REASON_HEADER, refusedRequestName, renderAuthorization, renderStatsPath } from '../../lib/guard-contract.ts';
import { createLogger } from '../../lib/log.ts';
import { Registry } from '../../lib/metrics.ts';
import { createGuard, type Guard } from '../../guard/index.ts';
import { NXDOMAIN, SERVFAIL, startDnsServer, type Zone } from './dns-server.ts';
import { closeServer, connectVia, listenOn, rawExchange, startCanary, touch, viaGuard, type Answer } from './helpers.ts';

const TARGET_HOST = '127.0.0.5';
const SELF_HOST = '127.0.0.6';
const CANARY_HOST = '127.0.0.2';

// The zone: what the loopback DNS server answers, by name and query type.
const zone: Zone = (name, type, asked) => {
  const a = (addresses: string[]) => (type === 'A' ? { addresses } : { addresses: [] });
  const aaaa = (addresses: string[]) => (type === 'AAAA' ? { addresses } : { addresses: [] });
  switch (name) {
    case 'public.test':
      return a([TARGET_HOST]);
    case 'several.test':
      return a([TARGET_HOST, CANARY_HOST, TARGET_HOST]);
    case 'v6-private.test':
      return type === 'A' ? { addresses: [TARGET_HOST] } : { addresses: ['fd00::7'] };
    // The first A answer is the target, every later one the canary: a second lookup by the
    // dialler would land on the canary.
    case 'rebind.test':
      return a([asked === 0 ? TARGET_HOST : CANARY_HOST]);
    // The other way round: refused first, then the "public" target.
    case 'rebind-late.test':
      return a([asked === 0 ? CANARY_HOST : TARGET_HOST]);
    case 'aaaa-only.test':
      return aaaa(['::ffff:7f00:5']); // ::ffff:127.0.0.5, allowed through its inner IPv4
    case 'aaaa-only-private.test':
      return aaaa(['fd00::9']);
    case 'nx.test':
      return { rcode: NXDOMAIN };
    case 'servfail.test':
      return { rcode: SERVFAIL };
    case 'empty.test':
      return { addresses: [] };
    case 'silent.test':
      return 'drop';
    case 'half.test':
      return type === 'A' ? { addresses: [TARGET_HOST] } : { rcode: SERVFAIL };
    // Resolved once when the guard starts (its address joins the self set), then answers the
    // allowed target: refusing it later shows the name itself is refused.
    case 'selfname.test':
      return a([asked === 0 ? SELF_HOST : TARGET_HOST]);
    case 'selfaddr.test':
      return a([SELF_HOST]);
    case 'self-and-private.test':
      return a([SELF_HOST, CANARY_HOST]);
    default:
      return { rcode: NXDOMAIN };
  }
};

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

const dns = await startDnsServer(zone);
const seen: Seen[] = [];
const target = http.createServer((req, res) => {
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (c: string) => (body += c));
  req.on('end', () => {
    seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
    if (req.url === '/own-reason') {
      // A target posing as the guard: its own x-guard-reason and x-guard-failure, in two
      // spellings of each name.
      const text = 'not the guard';
      res.writeHead(403, [
        'X-Guard-Reason', 'private_address', 'x-GUARD-reason', 'denied_host',
        'X-Guard-Failure', 'connect_refused', 'x-guard-FAILURE', 'reset',
        'X-Target', 'yes', 'Content-Length', String(text.length),
      ]);
      res.end(text);
      return;
    }
    if (req.url === '/reset') {
      // Reads the request, then drops the connection without a byte of answer.
      req.socket.resetAndDestroy();
      return;
    }
    const text = `target saw ${req.method} ${req.url}`;
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': Buffer.byteLength(text), 'x-target': 'yes' });
    res.end(text);
  });
});
target.on('upgrade', (req: http.IncomingMessage, socket: net.Socket) => {
  seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: '' });
  socket.end('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\nupgraded');
});
const targetPort = await listenOn(target, TARGET_HOST);
const canary = await startCanary(CANARY_HOST);
const canary6 = await startCanary('::1');
const lines: string[] = [];
const registry = new Registry();
const guard: Guard = createGuard({
  port: 0,
  dnsServers: [dns.server],
  dnsTimeoutMs: 2_000,
  allowCidrs: [`${TARGET_HOST}/32`, `${SELF_HOST}/32`],
  selfAddresses: [SELF_HOST, 'selfname.test'],
  logger: createLogger('guard', { sink: (line) => lines.push(line) }),
  metrics: registry,
});
await guard.start();
const port = guard.address().port!;
/** Render tokens as a renderer makes them (lib/render-token.ts); none may reach a log line. */
const minted: string[] = [];
const mint = (): string => {
  const token = guard.tokens.mint();
  minted.push(token);
  return token;
};
const g = { port };
t.teardown(async () => {
  await guard.stop();
  await closeServer(target);
  await canary.close();
  await canary6.close();
  await dns.close();
});

const at = (host: string, path = '/'): string => `http://${host}:${targetPort}${path}`;
const reasonOf = (a: { status: number; headers: http.IncomingHttpHeaders }): string =>
  a.status === 403 ? String(a.headers[GUARD_REASON_HEADER]) : `status ${a.status}`;

t.test('absolute-form http reaches the address it was judged at, hop-by-hop headers stripped', async (t) => {
  const before = seen.length;
  const answer = await viaGuard(g, at('public.test', '/p/a?q=1'), {
    method: 'POST',
    headers: {
      'proxy-authorization': renderAuthorization(mint()),
      'proxy-connection': 'keep-alive',
      'x-page': 'kept',
      'content-type': 'text/plain',
    },
    body: 'hello target',
  });
  t.equal(answer.status, 200);
  t.equal(answer.body, 'target saw POST /p/a?q=1');
  t.equal(answer.headers['x-target'], 'yes');
  t.equal(seen.length, before + 1);
  const got = seen.at(-1)!;
  t.equal(got.headers.host, `public.test:${targetPort}`, 'Host is the target authority');
  t.equal(got.headers['proxy-authorization'], undefined, 'Proxy-Authorization never reaches the target');
  t.equal(got.headers['proxy-connection'], undefined);
  t.equal(got.headers['x-page'], 'kept');
  t.equal(got.body, 'hello target');
  t.equal(dns.count('public.test', 'A'), 1, 'one A lookup');
  t.equal(dns.count('public.test', 'AAAA'), 1, 'one AAAA lookup');
});

t.test("a target's own x-guard-reason and x-guard-failure never pass through: only the guard's own answers carry them", async (t) => {
  const token = mint();
  const answer = await viaGuard(g, at('public.test', '/own-reason'), { headers: { 'proxy-authorization': renderAuthorization(token) } });
  t.equal(answer.status, 403, "the target's status passes");
  t.equal(answer.body, 'not the guard', "the target's body passes");
  t.equal(answer.headers['x-target'], 'yes', "the target's other headers pass");
  t.equal(answer.headers[GUARD_REASON_HEADER], undefined, 'no x-guard-reason, in any spelling');
  t.equal(answer.headers[GUARD_FAILURE_HEADER], undefined, 'no x-guard-failure, in any spelling');
  t.same(guard.takeTally(token), { blocked: 0, firstReason: null, refused: [] }, 'and nothing was counted');
  const raw = await rawExchange(port, `GET ${at('public.test', '/own-reason')} HTTP/1.1\r\nHost: public.test\r\nConnection: close\r\n\r\n`);
  t.match(raw, /^HTTP\/1\.1 403 /, 'the raw answer is the target one');
  t.notMatch(raw, new RegExp(GUARD_REASON_HEADER, 'i'), 'the raw answer holds no x-guard-reason line');
  t.notMatch(raw, new RegExp(GUARD_FAILURE_HEADER, 'i'), 'the raw answer holds no x-guard-failure line');
});

t.test('CONNECT tunnels to the judged address; refused tunnels answer 403 with a reason', async (t) => {
  const open = await connectVia(port, `public.test:${targetPort}`);
  t.equal(open.status, 200);
  const socket = open.socket!;
  const reply = await new Promise<string>((resolve) => {
    let out = '';
    socket.setEncoding('latin1');
    socket.on('data', (c: string) => (out += c));
    socket.on('close', () => resolve(out));
    socket.write(`GET /through-tunnel HTTP/1.1\r\nHost: public.test\r\nConnection: close\r\n\r\n`);
  });
  t.match(reply, /^HTTP\/1\.1 200 OK/);
  t.match(reply, /target saw GET \/through-tunnel$/);

  const rows: [string, string, string][] = [
    ['loopback literal', `${CANARY_HOST}:${canary.port}`, 'private_address'],
    ['hex spelling of the canary', `0x7f.0.0.2:${canary.port}`, 'private_address'],
    ['IPv6 loopback', `[::1]:${canary6.port}`, 'private_address'],
    ['several A records, one private', `several.test:${canary.port}`, 'private_address'],
    ['localhost', `localhost:${canary.port}`, 'bad_host'],
    ['NXDOMAIN', 'nx.test:443', 'dns_failure'],
    ['no port', 'public.test', 'bad_host'],
  ];
  for (const [scenario, authority, want] of rows) {
    const a = await connectVia(port, authority);
    t.equal(reasonOf(a), want, scenario);
  }
});

t.test('absolute-form WebSocket upgrades are judged, then tunnelled in origin-form', async (t) => {
  const upgrade = (url: string, extra = ''): string =>
    `GET ${url} HTTP/1.1\r\nHost: whatever\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n${extra}\r\n`;
  const before = seen.length;
  const ok = await rawExchange(port, upgrade(at('public.test', '/socket'), `Proxy-Authorization: ${renderAuthorization(mint())}\r\n`));
  t.match(ok, /^HTTP\/1\.1 101 Switching Protocols/);
  t.match(ok, /upgraded$/);
  const got = seen.at(before);
  t.equal(got?.url, '/socket', 'origin-form to the target');
  t.equal(got?.headers.host, `public.test:${targetPort}`);
  t.equal(got?.headers.upgrade, 'websocket');
  t.equal(got?.headers['proxy-authorization'], undefined);
  const refused = await rawExchange(port, upgrade(`http://${CANARY_HOST}:${canary.port}/socket`));
  t.match(refused, new RegExp(`^HTTP/1\\.1 403 [^]*\r\n${GUARD_REASON_HEADER}: private_address\r\n`));
  const tls = await rawExchange(port, upgrade('https://public.test/socket'));
  t.match(tls, new RegExp(`^HTTP/1\\.1 403 [^]*\r\n${GUARD_REASON_HEADER}: bad_scheme\r\n`), 'only http upgrades; wss goes by CONNECT');
});

t.test('resolver answers, end to end with the loopback DNS server', async (t) => {
  const rows: [string, string, string][] = [
    ['several A records, one private', 'several.test', 'private_address'],
    ['a private AAAA beside an allowed A', 'v6-private.test', 'private_address'],
    ['AAAA only, private', 'aaaa-only-private.test', 'private_address'],
    ['NXDOMAIN', 'nx.test', 'dns_failure'],
    ['SERVFAIL', 'servfail.test', 'dns_failure'],
    ['no answer records', 'empty.test', 'dns_failure'],
    ['no reply at all (timeout)', 'silent.test', 'dns_failure'],
    ['A answered, AAAA SERVFAIL', 'half.test', 'dns_failure'],
    ['our own name (GUARD_SELF_ADDRESSES)', 'selfname.test', 'denied_host'],
    ['our own address (GUARD_SELF_ADDRESSES)', 'selfaddr.test', 'denied_host'],
    ['our own and a private address: private first', 'self-and-private.test', 'private_address'],
  ];
  for (const [scenario, name, want] of rows) {
    const a = await viaGuard(g, at(name));
    t.equal(reasonOf(a), want, scenario);
  }
});

t.test('AAAA-only names are reached at the address their AAAA record gave', async (t) => {
  const before = seen.length;
  const a = await viaGuard(g, at('aaaa-only.test', '/six'));
  t.equal(a.status, 200);
  t.equal(a.body, 'target saw GET /six');
  t.equal(seen.length, before + 1);
  t.equal(dns.count('aaaa-only.test', 'AAAA'), 1);
});

t.test('rebinding: one lookup per request, and the dialler uses the address that was checked', async (t) => {
  const before = seen.length;
  const first = await viaGuard(g, at('rebind.test', '/first'));
  t.equal(first.status, 200, 'the first answer (allowed) is dialled');
  t.equal(seen.length, before + 1);
  t.equal(seen.at(-1)!.headers.host, `rebind.test:${targetPort}`);
  t.equal(dns.count('rebind.test', 'A'), 1, 'exactly one A lookup for the first request');
  const second = await viaGuard(g, at('rebind.test', '/second'));
  t.equal(reasonOf(second), 'private_address', 'the rebound answer is refused');
  t.equal(dns.count('rebind.test', 'A'), 2, 'one more lookup for the second request, none else');
  t.equal(seen.length, before + 1, 'the second request reached nothing');

  const tunnel = await connectVia(port, `rebind.test:${canary.port}`);
  t.equal(reasonOf(tunnel), 'private_address', 'a tunnel after rebinding is refused too');

  const late1 = await viaGuard(g, at('rebind-late.test'));
  t.equal(reasonOf(late1), 'private_address');
  const late2 = await viaGuard(g, at('rebind-late.test', '/late'));
  t.equal(late2.status, 200, 'a later allowed answer is judged afresh');
  t.equal(dns.count('rebind-late.test', 'A'), 2);
});

t.test('each request on a kept-alive connection is judged on its own', async (t) => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  t.teardown(() => agent.destroy());
  const send = (path: string): Promise<Answer & { reused: boolean }> =>
    new Promise((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port, path, agent });
      req.on('response', (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body, reused: req.reusedSocket }));
      });
      req.on('error', reject);
      req.end();
    });
  const one = await send(at('public.test', '/one'));
  const two = await send(`http://${CANARY_HOST}:${canary.port}/two`);
  const three = await send(at('several.test', '/three'));
  const four = await send(at('public.test', '/four'));
  t.equal(one.status, 200);
  t.equal(reasonOf(two), 'private_address');
  t.ok(two.reused, 'the refused request came on the same connection');
  t.equal(reasonOf(three), 'private_address');
  t.ok(three.reused);
  t.equal(four.status, 200);
  t.ok(four.reused);
  t.equal(four.body, 'target saw GET /four');
});

t.test("targets Node's parser rejects still get the guard's 403 with a reason", async (t) => {
  const rows: [string, string, string][] = [
    ['data:', 'GET data:text/html,<b>hi</b> HTTP/1.1', 'bad_scheme'],
    ['javascript:', 'GET javascript:alert(1) HTTP/1.1', 'bad_scheme'],
    ['no host', 'GET http:// HTTP/1.1', 'bad_host'],
    ['origin-form', 'GET / HTTP/1.1', 'bad_host'],
    ['asterisk', 'OPTIONS * HTTP/1.1', 'bad_host'],
    ['fragment holding an @', `GET http://${CANARY_HOST}:${canary.port}#@public.test HTTP/1.1`, 'private_address'],
    ['space in the host', 'GET http://exa mple.test/ HTTP/1.1', 'bad_host'],
  ];
  for (const [scenario, line, want] of rows) {
    const out = await rawExchange(port, `${line}\r\nHost: x\r\n\r\n`);
    t.match(out, /^HTTP\/1\.1 403 /, `${scenario}: 403, not a bare 400`);
    t.match(out, new RegExp(`\r\n${GUARD_REASON_HEADER}: ${want}\r\n`, 'i'), `${scenario}: ${want}`);
  }
});

t.test('a malformed request pipelined behind one still being answered gets its 403 after that answer', async (t) => {
  const first = `GET ${at('public.test', '/before')} HTTP/1.1\r\nHost: public.test\r\n\r\n`;
  const out = await rawExchange(port, `${first}GET javascript:alert(1) HTTP/1.1\r\nHost: x\r\n\r\n`);
  t.match(out, /^HTTP\/1\.1 200 OK[^]*target saw GET \/before/, 'the first answer is whole');
  t.match(out, new RegExp(`target saw GET /beforeHTTP/1\\.1 403 Forbidden\r\n[^]*${GUARD_REASON_HEADER}: bad_scheme\r\n`), 'the refusal follows it');
});

t.test('reason precedence: the first of bad_scheme, credentials_in_url, bad_host, dns_failure, private_address, denied_host', async (t) => {
  const rows: [string, string, string][] = [
    ['bad scheme before credentials and a private host', `ftp://u@${CANARY_HOST}/`, 'bad_scheme'],
    ['credentials before an internal name', 'http://u:p@localhost/', 'credentials_in_url'],
    ['credentials before a private address', `http://evil.test@${CANARY_HOST}:${canary.port}/`, 'credentials_in_url'],
    ['bad host before anything resolved', 'http://printer.local/', 'bad_host'],
    ['dns failure', at('nx.test'), 'dns_failure'],
    ['private before denied', at('self-and-private.test'), 'private_address'],
    ['denied, literal own address', `http://${SELF_HOST}:${targetPort}/`, 'denied_host'],
    ['mapped loopback', `http://[::ffff:7f00:2]:${canary.port}/`, 'private_address'],
    ['decimal canary', `http://2130706434:${canary.port}/`, 'private_address'],
    ['absolute-form https (browsers use CONNECT)', 'https://public.test/', 'bad_scheme'],
  ];
  for (const [scenario, url, want] of rows) {
    t.equal(reasonOf(await viaGuard(g, url)), want, scenario);
  }
});

t.test('refusals are counted per render, named by Proxy-Authorization', async (t) => {
  const [tokenA, tokenB, tokenC] = [mint(), mint(), mint()];
  const as = (token: string) => ({ headers: { 'proxy-authorization': renderAuthorization(token) } });
  const unnamedBefore = guard.unnamedTally().blocked;

  t.equal((await viaGuard(g, `http://${CANARY_HOST}:${canary.port}/`, as(tokenA))).status, 403);
  t.equal((await viaGuard(g, at('public.test', '/fine'), as(tokenA))).status, 200, 'allowed requests are not counted');
  t.equal(reasonOf(await viaGuard(g, 'ftp://public.test/', as(tokenA))), 'bad_scheme');
  t.equal(reasonOf(await connectVia(port, `[::1]:${canary6.port}`, as(tokenA).headers)), 'private_address');
  t.equal(reasonOf(await viaGuard(g, at('nx.test'), as(tokenB))), 'dns_failure');
  const raw = await rawExchange(port, `GET javascript:void(0) HTTP/1.1\r\nProxy-Authorization: ${renderAuthorization(tokenB)}\r\n\r\n`);
  t.match(raw, `${GUARD_REASON_HEADER}: bad_scheme`);
  t.equal(reasonOf(await viaGuard(g, at('several.test'))), 'private_address', 'unnamed');
  t.equal(reasonOf(await viaGuard(g, at('several.test'), { headers: { 'proxy-authorization': 'Basic bm90LWEtcmVuZGVy' } })), 'private_address', 'a value naming no render is unnamed');

  // A page cannot reach the tally path: its requests are absolute-form and judged as targets.
  const peek = await viaGuard(g, `http://127.0.0.1:${port}${renderStatsPath(tokenA)}`, as(tokenB));
  t.equal(reasonOf(peek), 'private_address');

  const fetchTally = (token: string) => viaGuard(g, renderStatsPath(token)).then((a) => ({ status: a.status, tally: JSON.parse(a.body) }));
  // The record names each refused request (by a digest, never its URL), as the renderer names its document.
  const named = (method: string, target: string, reason: string) => ({ request: refusedRequestName(method, target), reason });
  const a = await fetchTally(tokenA);
  t.same(a, {
    status: 200,
    tally: {
      blocked: 3,
      firstReason: 'private_address',
      refused: [
        named('GET', `http://${CANARY_HOST}:${canary.port}/`, 'private_address'),
        named('GET', 'ftp://public.test/', 'bad_scheme'),
        named('CONNECT', `[::1]:${canary6.port}`, 'private_address'),
      ],
    },
  });
  t.notMatch(JSON.stringify(a), /canary|public\.test|::1|127\./, 'the record carries no address or URL');
  t.same(await fetchTally(tokenA), { status: 200, tally: { blocked: 0, firstReason: null, refused: [] } }, 'a tally is forgotten once read');
  t.same(
    await fetchTally(tokenB),
    {
      status: 200,
      tally: {
        blocked: 3,
        firstReason: 'dns_failure',
        refused: [
          named('GET', at('nx.test'), 'dns_failure'),
          named('GET', 'javascript:void(0)', 'bad_scheme'),
          named('GET', `http://127.0.0.1:${port}${renderStatsPath(tokenA)}`, 'private_address'),
        ],
      },
    },
    "B's count holds only B's refusals",
  );
  t.same(await fetchTally(tokenC), { status: 200, tally: { blocked: 0, firstReason: null, refused: [] } }, 'a render never refused');
  t.equal(guard.unnamedTally().blocked - unnamedBefore, 2, 'requests naming no render are counted apart');
  t.same(guard.takeTally(tokenA), { blocked: 0, firstReason: null, refused: [] });
});

t.test('the tunnel bound and the idle timeout are settings; failing targets are 502/504, not refusals', async (t) => {
  const quiet = { logger: createLogger('guard', { sink: (line: string) => lines.push(line) }) };
  const bounded = createGuard({ port: 0, allowCidrs: [`${TARGET_HOST}/32`], maxTunnels: 1, ...quiet });
  // Only for the idle rows: a short idle timeout, so nothing else in this guard may be slow.
  const small = createGuard({ port: 0, allowCidrs: [`${TARGET_HOST}/32`], idleTimeoutMs: 300, ...quiet });
  await bounded.start();
  await small.start();
  t.teardown(() => bounded.stop());
  t.teardown(() => small.stop());
  const b = bounded.address().port!;
  const first = await connectVia(b, `${TARGET_HOST}:${targetPort}`);
  t.equal(first.status, 200);
  const second = await connectVia(b, `${TARGET_HOST}:${targetPort}`);
  t.equal(second.status, 503, 'over the bound');
  first.socket!.destroy();
  let third = 0;
  for (let i = 0; i < 100 && third !== 200; i += 1) {
    const again = await connectVia(b, `${TARGET_HOST}:${targetPort}`);
    third = again.status;
    again.socket?.destroy();
  }
  t.equal(third, 200, 'a place is free again once the tunnel closed');

  const p = small.address().port!;
  const idle = await connectVia(p, `${TARGET_HOST}:${targetPort}`);
  t.equal(idle.status, 200);
  // Nothing is sent through the open tunnel: the guard closes it when idle.
  await new Promise<void>((resolve) => idle.socket!.on('close', () => resolve()).resume());
  t.pass('an idle tunnel is closed by the guard');

  // A target that accepts and never answers: the guard gives up after the idle timeout.
  const silent = net.createServer((s) => s.resume());
  const silentPort = await listenOn(silent, TARGET_HOST);
  t.teardown(() => closeServer(silent));
  const hung = await viaGuard({ port: p }, `http://${TARGET_HOST}:${silentPort}/`);
  t.equal(hung.status, 504, 'an upstream that never answers is a 504');
  t.equal(hung.headers[GUARD_REASON_HEADER], undefined, 'not a refusal');
  t.equal(hung.headers[GUARD_FAILURE_HEADER], 'idle_timeout', "marked as the guard's own answer");
  // An allowed address where nothing listens: a port that was bound and is closed again.
  const gone = net.createServer();
  const closedPort = await listenOn(gone, TARGET_HOST);
  await closeServer(gone);
  const refusedConn = await viaGuard({ port: p }, `http://${TARGET_HOST}:${closedPort}/`);
  t.equal(refusedConn.status, 502, 'an upstream that refuses the connection is a 502');
  t.equal(refusedConn.headers[GUARD_FAILURE_HEADER], 'connect_refused', "marked as the guard's own answer");
  t.equal(refusedConn.headers[GUARD_REASON_HEADER], undefined, 'not a refusal');
  // A target that takes the request and resets the connection.
  const reset = await viaGuard({ port: p }, `http://${TARGET_HOST}:${targetPort}/reset`);
  t.equal(reset.status, 502, 'an upstream that resets is a 502');
  t.equal(reset.headers[GUARD_FAILURE_HEADER], 'reset', "marked as the guard's own answer");
});

t.test('a target that never completes the connect is a 504 marked connect_timeout', async (t) => {
  // No address on loopback leaves a SYN unanswered, so the dialer seam hands out a socket
  // that stays connecting, as one to a host that drops SYNs does.
  const stuck: net.Socket[] = [];
  const slow = createGuard({
    port: 0,
    allowCidrs: [`${TARGET_HOST}/32`],
    connectTimeoutMs: 200,
    dial: () => {
      const s = new net.Socket();
      Object.defineProperty(s, 'connecting', { value: true });
      stuck.push(s);
      return s;
    },
    logger: createLogger('guard', { sink: (line) => lines.push(line) }),
  });
  await slow.start();
  t.teardown(() => slow.stop());
  const answer = await viaGuard({ port: slow.address().port! }, `http://${TARGET_HOST}:${targetPort}/`);
  t.equal(answer.status, 504, 'a connect that never completes is a 504');
  t.equal(answer.headers[GUARD_FAILURE_HEADER], 'connect_timeout', "marked as the guard's own answer");
  t.equal(stuck.length, 1, 'the dialer was asked once');
  t.ok(stuck[0]!.destroyed, 'the stuck socket was destroyed');
});

t.test('stop() lets an exchange in flight finish, then closes what is still open after the grace', async (t) => {
  const g2 = createGuard({
    port: 0,
    allowCidrs: [`${TARGET_HOST}/32`],
    stopGraceMs: 200,
    logger: createLogger('guard', { sink: (line) => lines.push(line) }),
  });
  await g2.start();
  const p = g2.address().port!;
  const open = await connectVia(p, `${TARGET_HOST}:${targetPort}`);
  t.equal(open.status, 200);
  const closed = new Promise<void>((resolve) => open.socket!.on('close', () => resolve()).resume());
  t.ok(g2.healthy());
  await g2.stop('SIGTERM');
  t.notOk(g2.healthy(), 'not healthy once stopped');
  await closed;
  t.pass('the open tunnel was closed');
  await t.rejects(viaGuard({ port: p }, at('public.test')), 'no longer listening');
});

t.test('decision lines carry the reason and never a URL, host, address or token', async (t) => {
  const decisions = lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.event === 'guard.decision');
  t.ok(decisions.length >= 40, 'one line per request');
  t.ok(decisions.some((d) => d.reason === 'private_address' && d.decision === 'refused'));
  t.ok(decisions.some((d) => d.reason === 'bad_scheme' && d.kind === 'malformed'));
  for (const d of decisions) if (d.decision === 'refused') t.ok(typeof d.reason === 'string');
  const all = lines.join('\n');
  const secrets = [
    'public.test', 'several.test', 'rebind', 'nx.test', 'selfname', 'localhost', 'printer', 'evil',
    CANARY_HOST, TARGET_HOST, SELF_HOST, '::1', '7f00', 'javascript', 'data:', '/p/a', 'q=1',
    ...minted, String(targetPort), String(canary.port), String(canary6.port),
  ];
  for (const s of secrets) t.notOk(all.includes(s), `no log line contains ${s}`);
  const metrics = registry.render();
  t.match(metrics, /tintype_guard_refusals_total\{reason="private_address"\} \d+/);
  t.match(metrics, /tintype_guard_refusals_total\{reason="dns_failure"\} \d+/);
});

t.test('the listeners on refused addresses received zero connections', async (t) => {
  t.equal(canary.accepted(), 0, `canary on ${CANARY_HOST}`);
  t.equal(canary6.accepted(), 0, 'canary on [::1]');
  // The canaries do count: one direct connection each shows up.
  await touch(CANARY_HOST, canary.port);
  await touch('::1', canary6.port);
  await new Promise((r) => setImmediate(r));
  t.equal(canary.accepted(), 1);
  t.equal(canary6.accepted(), 1);
});


