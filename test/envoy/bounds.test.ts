/**
 * What a stranger can hold at the embedded edge before any key is checked (docs/security.md "The meter's walls"):
 * the bytes of unauthorized bodies (`TINTYPE_EDGE_MAX_BUFFERED_BYTES`, past it 503 `busy` at
 * once), the time headers and body may take (408 `request_timeout`, then the connection goes),
 * and the number of connections (`TINTYPE_EDGE_MAX_CONNECTIONS`). Against stand-ins for policy
 * and the renderer on real sockets.
 */
import net from 'node:net';
import t from 'tap';
import { createEdge, type Edge } from '../../envoy/edge/edge.ts';
import { MAX_BODY_BYTES } from '../../lib/policy-contract.ts';
import { policyStub, rendererStub } from './stubs.ts';

const quiet = { debug() {}, info() {}, warn() {}, error() {}, child() { return quiet; } };
const MiB = 1024 * 1024;

async function rig(
  t: { teardown(fn: () => unknown): void },
  o: { maxBufferedBytes?: number; maxConnections?: number; headersTimeoutMs?: number; bodyTimeoutMs?: number } = {},
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

function connect(port: number): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
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

t.test('40 clients each holding 4,190,000 of 4,194,304 bytes: never more than the bound, 503 busy at once past it, all closed by the body timeout', async (t) => {
  const bound = 64 * MiB;
  // Long enough that every client has written its body before the first one times out, on a busy machine too.
  const r = await rig(t, { maxBufferedBytes: bound, bodyTimeoutMs: 20_000 });
  const rssBefore = process.memoryUsage().rss;
  let highest = 0;
  let highestRss = 0;
  const watch = setInterval(() => {
    highest = Math.max(highest, r.edge.bufferedBytes());
    highestRss = Math.max(highestRss, process.memoryUsage().rss);
  }, 5);
  t.teardown(() => clearInterval(watch));

  const clients = await Promise.all(Array.from({ length: 40 }, () => connect(r.port)));
  // The order answers arrive in: a refusal "at once" comes before any body could time out.
  const arrivals: number[] = [];
  clients.forEach((c) => void c.answered.then((text) => arrivals.push(statusOf(text))));
  await Promise.all(clients.map(async (c) => {
    c.socket.write(head(r.port, MAX_BODY_BYTES));
    await Promise.race([writeBody(c.socket, 4_190_000), c.answered]);
  }));
  const held = Math.floor(bound / MAX_BODY_BYTES);
  const texts = await Promise.all(clients.map((c) => c.closed));
  clearInterval(watch);

  const busy = texts.filter((s) => statusOf(s) === 503);
  const timedOut = texts.filter((s) => statusOf(s) === 408);
  t.equal(busy.length, 40 - held, `${40 - held} refused with 503 busy`);
  for (const s of busy) {
    t.match(s, /\r\nretry-after: 1\r\n/i);
    t.same(jsonOf(s), { error: 'busy' });
  }
  t.same(arrivals.slice(0, 40 - held), Array(40 - held).fill(503), 'every refusal came before the first body timed out');
  t.equal(timedOut.length, held, `the ${held} held bodies timed out, 408`);
  for (const s of timedOut) t.same(jsonOf(s), { error: 'request_timeout' });
  t.equal(highest, held * MAX_BODY_BYTES, `never more than the bound held (${highest} bytes at most)`);
  t.ok(highestRss - rssBefore < bound + 64 * MiB, `resident memory rose by ${Math.round((highestRss - rssBefore) / MiB)} MiB at most`);
  t.equal(r.edge.bufferedBytes(), 0, 'nothing held once they are gone');
  t.equal(r.policySeen(), 0, 'no key was ever looked up');
});

t.test('a chunked body that would pass the budget is 503 busy as soon as it would', async (t) => {
  const r = await rig(t, { maxBufferedBytes: 4 * MiB + 10, bodyTimeoutMs: 5_000 });
  const first = await connect(r.port);
  first.socket.write(head(r.port, MAX_BODY_BYTES));
  await writeBody(first.socket, 1_000);
  const second = await connect(r.port);
  second.socket.write(`POST /v1/echo HTTP/1.1\r\nhost: x\r\nauthorization: Bearer sk_good_0123456789\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n`);
  second.socket.write('6\r\nhello!\r\n');
  const text = await second.answered;
  t.equal(statusOf(text), 503, 'the eleventh byte would pass the budget');
  t.same(jsonOf(text), { error: 'busy' });
  first.socket.destroy();
  second.socket.destroy();
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
  t.equal(r.edge.bufferedBytes(), 0);
  t.equal(r.policySeen(), 0);
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
