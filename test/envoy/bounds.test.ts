/**
 * What a stranger can hold at the embedded edge (docs/security.md "The meter's walls"): no body
 * before its key is checked on the headers, the time headers and body may take (408 `request_timeout`, then the connection goes),
 * and the number of connections (`TINTYPE_EDGE_MAX_CONNECTIONS`). Against stand-ins for policy
 * and the renderer on real sockets.
 */
import net from 'node:net';
import v8 from 'node:v8';
import vm from 'node:vm';
import t from 'tap';
import { createEdge, type Edge } from '../../envoy/edge/edge.ts';
import { IDLE_TIMEOUT_MS } from '../../envoy/edge/contract.ts';
import { MAX_BODY_BYTES } from '../../lib/policy-contract.ts';
import { policyStub, rendererStub } from './stubs.ts';

/** A full collection (V8's gc, exposed to this test alone). */
v8.setFlagsFromString('--expose-gc');
const collectGarbage = vm.runInNewContext('gc') as () => void;

const quiet = { debug() {}, info() {}, warn() {}, error() {}, child() { return quiet; } };
const MiB = 1024 * 1024;

async function rig(
  t: { teardown(fn: () => unknown): void },
  o: { maxConnections?: number; headersTimeoutMs?: number; bodyTimeoutMs?: number; idleTimeoutMs?: number } = {},
): Promise<{ edge: Edge; port: number; policySeen: () => number }> {
  const policy = await policyStub();
  const renderer = await rendererStub();
  const edge = createEdge({
    policyUrl: policy.url, rendererUrls: [renderer.url], host: '127.0.0.1', port: 0, openapi: Buffer.from('{}'), logger: quiet, ...o,
  });
  await edge.start();
  t.teardown(async () => {
    await edge.stop();
    await policy.close();
    await renderer.close();
  });
  return { edge, port: edge.port(), policySeen: () => policy.seen.length };
}

interface Raw {
  socket: net.Socket;
  /** Everything the edge sent, as text (answers here are small JSON). */
  text: () => string;
  /** Resolves when the connection is closed, with whatever the edge had sent. */
  closed: Promise<string>;
  /** Resolves as soon as the first bytes of an answer arrive. */
  answered: Promise<string>;
}

/** A connection to the edge, from `from` (any 127.0.0.0/8 address is this machine's). */
function connect(port: number, from = '127.0.0.1'): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host: '127.0.0.1', localAddress: from });
    let received = '';
    let answer!: (s: string) => void;
    const answered = new Promise<string>((r) => (answer = r));
    const closed = new Promise<string>((r) => socket.once('close', () => {
      answer(received);
      r(received);
    }));
    socket.on('data', (c: Buffer) => {
      received += c.toString('latin1');
      answer(received);
    });
    socket.on('error', () => {});
    socket.once('connect', () => resolve({ socket, text: () => received, closed, answered }));
    socket.once('error', reject);
  });
}

/** Writes `n` bytes of body, waiting for the socket to take them. */
async function writeBody(socket: net.Socket, n: number): Promise<void> {
  const piece = Buffer.alloc(64 * 1024, 0x20);
  let sent = 0;
  while (sent < n && !socket.destroyed) {
    const k = Math.min(piece.length, n - sent);
    sent += k;
    if (!socket.write(k === piece.length ? piece : piece.subarray(0, k))) {
      await new Promise<void>((r) => {
        socket.once('drain', r);
        socket.once('close', r);
      });
    }
  }
}

const head = (port: number, length: number): string =>
  `POST /v1/echo HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\nauthorization: Bearer sk_good_0123456789\r\n` +
  `content-type: application/json\r\ncontent-length: ${length}\r\n\r\n`;

const statusOf = (text: string): number => Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
const jsonOf = (text: string): unknown => JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4));

t.test('40 clients, each from its own address, sending 4,190,000 of 4,194,304 bytes without a key: each refused on its headers at once, no body held', async (t) => {
  const r = await rig(t, { bodyTimeoutMs: 20_000 });
  // Memory the process holds in buffers (the bodies are Buffers), clients and edge alike. A
  // sample over the limit counts only if it is still there after a full collection: garbage not
  // yet collected is not held, and how much of it lingers depends on the machine's load.
  const limit = 128 * MiB;
  collectGarbage();
  const buffersBefore = process.memoryUsage().arrayBuffers;
  let highestBuffers = 0;
  const watch = setInterval(() => {
    let buffers = process.memoryUsage().arrayBuffers;
    if (buffers - buffersBefore >= limit) {
      collectGarbage();
      buffers = process.memoryUsage().arrayBuffers;
    }
    highestBuffers = Math.max(highestBuffers, buffers);
  }, 5);
  t.teardown(() => clearInterval(watch));

  const clients = await Promise.all(Array.from({ length: 40 }, (_, i) => connect(r.port, `127.0.0.${i + 2}`)));
  await Promise.all(clients.map(async (c) => {
    c.socket.write(head(r.port, MAX_BODY_BYTES).replace('sk_good_0123456789', 'sk_nobody_0123456789'));
    await Promise.race([writeBody(c.socket, 4_190_000), c.answered]);
  }));
  const texts = await Promise.all(clients.map((c) => c.answered));
  clearInterval(watch);
  for (const c of clients) c.socket.destroy();
  t.same(texts.map(statusOf), Array(40).fill(401), 'every client answered 401 by policy, on its headers');
  t.ok(highestBuffers - buffersBefore < limit, `memory held in buffers rose by ${Math.round((highestBuffers - buffersBefore) / MiB)} MiB at most`);
  t.equal(r.policySeen(), 40, 'each key looked up once');
});

t.test('16 connections announcing 4 MiB bodies they never send: a keyed 40-byte render is answered, not 503 busy', async (t) => {
  const r = await rig(t, { bodyTimeoutMs: 20_000 });
  const strangers = await Promise.all(Array.from({ length: 16 }, () => connect(r.port)));
  for (const s of strangers) {
    s.socket.write(`POST /v1/screenshot HTTP/1.1\r\nhost: 127.0.0.1:${r.port}\r\ncontent-type: application/json\r\ncontent-length: ${MAX_BODY_BYTES}\r\n\r\n`);
  }
  const refused = await Promise.all(strangers.map((s) => s.answered));
  t.same(refused.map(statusOf), Array(16).fill(401), 'each refused on its headers, its body never waited for');
  const keyed = await connect(r.port);
  const body = JSON.stringify({ url: 'https://example.com/abcdefghij' });
  t.equal(body.length, 40);
  keyed.socket.write(`POST /v1/screenshot HTTP/1.1\r\nhost: 127.0.0.1:${r.port}\r\nauthorization: Bearer sk_good_0123456789\r\n` +
    `content-type: application/json\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`);
  const text = await keyed.closed;
  t.equal(statusOf(text), 200, 'the keyed render was forwarded and answered');
  for (const s of strangers) s.socket.destroy();
});

t.test('a keyed chunked body past the limit is 413 as soon as it passes it', async (t) => {
  const r = await rig(t, { bodyTimeoutMs: 5_000 });
  const c = await connect(r.port, '127.0.0.3');
  c.socket.write(`POST /v1/echo HTTP/1.1\r\nhost: x\r\nauthorization: Bearer sk_good_0123456789\r\ntransfer-encoding: chunked\r\n\r\n`);
  const piece = 64 * 1024;
  const chunk = `${piece.toString(16)}\r\n${' '.repeat(piece)}\r\n`;
  for (let sent = 0; sent <= MAX_BODY_BYTES && !c.socket.destroyed && c.text() === ''; sent += piece) {
    if (!c.socket.write(chunk)) await new Promise((res) => c.socket.once('drain', res).once('close', res));
  }
  const text = await c.answered;
  t.equal(statusOf(text), 413);
  t.same(jsonOf(text), { error: 'payload_too_large' });
  c.socket.destroy();
});

t.test('headers not in within the headers timeout: 408 request_timeout and the connection closes', async (t) => {
  const r = await rig(t, { headersTimeoutMs: 1_000 });
  const c = await connect(r.port);
  c.socket.write('POST /v1/echo HTTP/1.1\r\nhost: 127.0.0.1\r\nauthoriz');
  const text = await c.closed;
  t.equal(statusOf(text), 408);
  t.match(text, /\r\ncontent-type: application\/json/i);
  t.same(jsonOf(text), { error: 'request_timeout' });
  t.equal(r.policySeen(), 0);
});

t.test('a body not in within the body timeout: 408 request_timeout and the connection closes', async (t) => {
  const r = await rig(t, { bodyTimeoutMs: 1_000 });
  const c = await connect(r.port);
  c.socket.write(head(r.port, 100));
  c.socket.write('{"a":');
  const text = await c.closed;
  t.equal(statusOf(text), 408);
  t.same(jsonOf(text), { error: 'request_timeout' });
  t.equal(r.policySeen(), 1, 'the key was checked on the headers, before the body');
});

t.test('a kept-alive connection with no request stays open for the idle timeout (Envoy\'s idle_timeout), then closes', async (t) => {
  const ping = 'GET /v1/ping HTTP/1.1\r\nhost: x\r\nauthorization: Bearer sk_good_0123456789\r\n\r\n';
  const kept = await rig(t);
  const c = await connect(kept.port);
  c.socket.write(ping);
  const first = await c.answered;
  t.equal(statusOf(first), 200);
  t.match(first, new RegExp(`\r\nkeep-alive: timeout=${IDLE_TIMEOUT_MS / 1000}\r\n`, 'i'), 'the client is told how long it is kept');
  // Past Node's own keep-alive (5 s), a client's pool still holds the connection and sends on it.
  await new Promise((r) => setTimeout(r, 6_000));
  const sent = c.text().length;
  c.socket.write(ping);
  await new Promise((r) => c.socket.once('data', r).once('close', r));
  t.equal(statusOf(c.text().slice(sent)), 200, 'a request 6 s later on the same connection is answered');
  c.socket.destroy();

  const short = await rig(t, { idleTimeoutMs: 500 });
  const d = await connect(short.port);
  d.socket.write(ping);
  t.equal(statusOf(await d.answered), 200);
  t.equal(statusOf(await d.closed), 200, 'idle past the idle timeout: the edge closes it');
});

t.test('at most the connection limit: one more is closed unanswered, and room comes back', async (t) => {
  const r = await rig(t, { maxConnections: 3 });
  const open = await Promise.all([0, 1, 2].map(() => connect(r.port)));
  // Each is accepted: a ping on it is answered.
  for (const c of open) {
    c.socket.write('GET /v1/ping HTTP/1.1\r\nhost: x\r\nauthorization: Bearer sk_good_0123456789\r\n\r\n');
    t.equal(statusOf(await c.answered), 200);
  }
  const extra = await connect(r.port);
  t.equal(await extra.closed, '', 'the fourth connection is closed without an answer');
  open[0]!.socket.destroy();
  await open[0]!.closed;
  let again: Raw | undefined;
  for (let i = 0; i < 100; i++) {
    again = await connect(r.port);
    again.socket.write('GET /v1/ping HTTP/1.1\r\nhost: x\r\nauthorization: Bearer sk_good_0123456789\r\n\r\n');
    if ((await again.answered) !== '') break;
    await new Promise((res) => setTimeout(res, 20));
  }
  t.equal(statusOf(again!.text()), 200, 'a connection closed makes room for a new one');
  for (const c of [...open, again!]) c.socket.destroy();
});
