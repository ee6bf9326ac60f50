/**
 * What one render may hold of the guard, with real Chromium, its relay process and the real guard
 * (docs/security.md "The guard", "Capacity"): a page that opens dozens of WebSockets holds its
 * lane's bound (GUARD_MAX_TUNNELS_PER_RENDER) and renders; a render whose tunnel the guard refused
 * because it was full answers 503 `busy`, not metered (spec Part 7), not 502 `render_failed`.
 */
import { createHash } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import t from 'tap';
import { renderAuthorization } from '../../../lib/guard-contract.ts';
import { settleIsMetered } from '../../../lib/policy-contract.ts';
import { listenBesideService } from '../../lib/listen-beside.ts';
import { testGuardTokens } from '../../lib/leases.ts';
import { SITE_HOST, newLease, post, startHarness, until } from './harness.ts';

const PER_RENDER = 6;
const SOCKETS = 40;

const h = await startHarness({
  env: { TINTYPE_SLOTS: '1', TINTYPE_RENDER_TIMEOUT_MS: '20000', GUARD_MAX_TUNNELS: '8', GUARD_MAX_TUNNELS_PER_RENDER: String(PER_RENDER) },
});
t.teardown(() => h.close());

/** A WebSocket server that keeps every socket it accepted, and the most it held at once. */
const open = new Set<net.Socket>();
let most = 0;
let wake: () => void = () => {};
const server = http.createServer((req, res) => {
  if (req.url === '/hold') {
    // The page's load waits here until every socket is open, or long enough for them to have been.
    const timer = setTimeout(() => res.end(), 4_000);
    wake = () => {
      clearTimeout(timer);
      res.end();
    };
    if (open.size >= SOCKETS) wake();
    return;
  }
  res.writeHead(200, { 'content-type': 'text/html' });
  res.end('<!doctype html><p>ok</p>');
});
server.on('upgrade', (req: http.IncomingMessage, socket: net.Socket) => {
  const accept = createHash('sha1').update(`${req.headers['sec-websocket-key']}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64');
  socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
  socket.on('error', () => {});
  socket.resume(); // read, so the other end's close is seen, and closes this one
  socket.on('end', () => socket.destroy());
  open.add(socket);
  most = Math.max(most, open.size);
  socket.on('close', () => open.delete(socket));
  if (open.size >= SOCKETS) wake();
});
const port = await listenBesideService(server, SITE_HOST);
t.teardown(() => {
  for (const s of open) s.destroy();
  server.closeAllConnections();
  return new Promise<void>((resolve) => server.close(() => resolve()));
});

t.test(`a page opening ${SOCKETS} WebSockets holds at most ${PER_RENDER} connections at once, and renders`, async (t) => {
  const html = `<!doctype html><p>sockets</p><script>
for (let i = 0; i < ${SOCKETS}; i++) new WebSocket('ws://${SITE_HOST}:${port}/s' + i);
</script><img src="http://${SITE_HOST}:${port}/hold">`;
  const a = await post(h, 'html-to-image', { html });
  t.equal(a.status, 200, 'the render answers');
  t.ok(most > 0, `the page reached the server (${most} at most)`);
  t.ok(most <= PER_RENDER, `at most ${PER_RENDER} held at once (${most})`);
});

t.test("a render whose tunnel the guard refused for being full answers 503 busy, not metered", async (t) => {
  await until(() => open.size === 0, "the first page's sockets to be closed with its render");
  // Two other renders' tunnels fill the guard (8 in all, 4 each: within their own bound).
  const held: net.Socket[] = [];
  t.teardown(() => held.forEach((s) => s.destroy()));
  const tokens = [testGuardTokens.mint(), testGuardTokens.mint()];
  for (let n = 0; n < 8; n += 1) {
    const s = net.connect({ path: path.join(h.dir, 'guard.sock') });
    s.on('error', () => {});
    held.push(s);
    const answer = await new Promise<string>((resolve) => {
      s.once('data', (c: Buffer) => resolve(c.toString('latin1')));
      s.write(`CONNECT ${SITE_HOST}:${port} HTTP/1.1\r\nHost: ${SITE_HOST}:${port}\r\nProxy-Authorization: ${renderAuthorization(tokens[n % 2]!)}\r\n\r\n`);
    });
    t.match(answer, /^HTTP\/1\.1 200 /, `tunnel ${n + 1} of 8 open`);
  }
  const lease = newLease('screenshot');
  const a = await post(h, 'screenshot', { url: `https://${SITE_HOST}:${port}/` }, { lease });
  t.equal(a.status, 503, 'busy, as when every slot is taken');
  t.same(a.json(), { error: 'busy' });
  t.equal(a.headers.get('retry-after'), '1');
  await until(() => h.settler.settled.some((s) => s.lease === lease), 'the settle');
  const settle = h.settler.settled.find((s) => s.lease === lease)!;
  t.same(settle, { lease, status: 503, error: 'busy' });
  t.notOk(settleIsMetered(settle), 'not metered');
});
