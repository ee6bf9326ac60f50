/** The embedded edge against stand-ins for policy and the renderer (real sockets). */
import t from 'tap';
import http from 'node:http';
import net from 'node:net';
import { createEdge, type Edge } from '../../envoy/edge/edge.ts';
import { createAdminServer, LIVE_PATH, METRICS_PATH, READY_PATH } from '../../lib/admin.ts';
import { EXT_AUTHZ_PREFIX, KEY_ID_HEADER, LEASE_HEADER, MAX_BODY_BYTES, RATELIMIT_LIMIT_HEADER, RATELIMIT_REMAINING_HEADER } from '../../lib/policy-contract.ts';
import { Registry } from '../../lib/metrics.ts';
import { policyStub, rendererStub, type RendererStub } from './stubs.ts';
import { send } from './client.ts';
import { CACHE_HEADER } from '../../renderer/server/answer-headers.ts';

const OPENAPI = Buffer.from(JSON.stringify({ openapi: '3.1.0', info: { title: 't', version: '1.0.0' }, paths: {} }));
const GOOD = { authorization: 'Bearer sk_good_0123456789' };
const BAD = { authorization: 'Bearer sk_nope_0123456789' };
const quiet = { debug() {}, info() {}, warn() {}, error() {}, child() { return quiet; } };

interface Rig { edge: Edge; policy: Awaited<ReturnType<typeof policyStub>>; renderer: RendererStub; port: number; metrics: Registry }

async function rig(t: { teardown(fn: () => unknown): void }, extra: { policyUrl?: string; rendererUrl?: string } = {}): Promise<Rig> {
  const policy = await policyStub();
  const renderer = await rendererStub();
  const metrics = new Registry();
  const edge = createEdge({
    policyUrl: extra.policyUrl ?? policy.url,
    rendererUrls: [extra.rendererUrl ?? renderer.url],
    host: '127.0.0.1',
    port: 0,
    openapi: OPENAPI,
    logger: quiet,
    metrics,
  });
  await edge.start();
  t.teardown(async () => {
    await edge.stop();
    await policy.close();
    await renderer.close();
  });
  return { edge, policy, renderer, port: edge.port(), metrics };
}

const json = (b: Buffer): any => JSON.parse(b.toString('utf8'));

/** Asks for `/v1/slow` and goes away (closes the connection) as soon as `now()` holds. */
function leaveWhen(port: number, headers: Record<string, string>, now: () => boolean): Promise<void> {
  return new Promise<void>((resolve) => {
    const req = http.request({ host: '127.0.0.1', port, path: '/v1/slow', headers, agent: false });
    req.on('error', () => {});
    req.end();
    const poll = setInterval(() => {
      if (now()) {
        clearInterval(poll);
        req.destroy();
        resolve();
      }
    }, 5);
  });
}

t.test('413 before any key lookup, at the limit and one byte past it', async (t) => {
  const r = await rig(t);
  const rows = [
    { name: 'limit - 1 announced', size: MAX_BODY_BYTES - 1, status: 200 },
    { name: 'limit announced', size: MAX_BODY_BYTES, status: 200 },
    { name: 'limit + 1 announced', size: MAX_BODY_BYTES + 1, status: 413 },
  ];
  for (const row of rows) {
    const before = r.policy.seen.length;
    const a = await send({ port: r.port, method: 'POST', path: '/v1/echo', headers: { ...GOOD, 'content-type': 'application/json' }, body: Buffer.alloc(row.size, 0x20) });
    t.equal(a.status, row.status, row.name);
    if (row.status === 413) {
      t.same(json(a.body), { error: 'payload_too_large' }, `${row.name}: body`);
      t.match(a.headers['content-type'], /^application\/json/);
      t.equal(r.policy.seen.length, before, `${row.name}: policy never asked`);
    } else {
      t.equal(a.body.length, row.size, `${row.name}: body passed through whole`);
    }
  }
});

t.test('an oversized body with a bad key is 413, not 401', async (t) => {
  const r = await rig(t);
  const a = await send({ port: r.port, method: 'POST', path: '/v1/pdf', headers: BAD, body: Buffer.alloc(MAX_BODY_BYTES + 1) });
  t.equal(a.status, 413);
  t.equal(r.policy.seen.length, 0);
});

t.test('after a 413 the rest of an announced body is read, not reset, even with connection: close', async (t) => {
  const r = await rig(t);
  const total = 64 * 1024 * 1024;
  const sock = net.connect(r.port, '127.0.0.1');
  await new Promise<void>((resolve) => sock.once('connect', () => resolve()));
  let answer = '';
  const answered = new Promise<void>((resolve) => sock.on('data', (c: Buffer) => {
    answer += c.toString('latin1');
    if (answer.includes('payload_too_large')) resolve();
  }));
  const failed = new Promise<string>((resolve) => sock.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error')));
  sock.write(`POST /v1/pdf HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-length: ${total}\r\n\r\n`);
  sock.write(Buffer.alloc(65_536, 0x20));
  await answered;
  t.match(answer, /^HTTP\/1\.1 413 /);
  // The client goes on writing, as clients that do not read while they send do.
  const piece = Buffer.alloc(1024 * 1024, 0x20);
  const wrote = (async () => {
    for (let sent = 65_536; sent < total; sent += piece.length) {
      const n = Math.min(piece.length, total - sent);
      if (sock.destroyed) return 'destroyed';
      if (!sock.write(n === piece.length ? piece : piece.subarray(0, n))) await new Promise((res) => sock.once('drain', res));
    }
    return 'all written';
  })();
  t.equal(await Promise.race([wrote, failed]), 'all written', 'the rest of the body was taken, not reset');
  sock.destroy();
});

t.test('a chunked body, with a key or without, refused while it streams at limit + 1 (spec Part 5 rule 5); a small one without a key gets policy\'s answer', async (t) => {
  const r = await rig(t);
  const unkeyed = await send({ port: r.port, method: 'POST', path: '/v1/screenshot', headers: BAD, chunkedBytes: 64 * 1024 * 1024, stopOnAnswer: true });
  t.equal(unkeyed.status, 413, 'over the limit: 413 whatever the key');
  t.same(json(unkeyed.body), { error: 'payload_too_large' });
  t.ok(unkeyed.sentBeforeAnswer < 16 * 1024 * 1024, `answered after ${unkeyed.sentBeforeAnswer} bytes of 64 MiB: not read to the end first`);
  const small = await send({ port: r.port, method: 'POST', path: '/v1/screenshot', headers: BAD, chunkedBytes: 1024 });
  t.equal(small.status, 401, 'within the limit: policy\'s answer');
  const big = await send({ port: r.port, method: 'POST', path: '/v1/screenshot', headers: GOOD, chunkedBytes: 64 * 1024 * 1024, stopOnAnswer: true });
  t.equal(big.status, 413);
  t.same(json(big.body), { error: 'payload_too_large' });
  t.ok(big.sentBeforeAnswer < 16 * 1024 * 1024, `answered after ${big.sentBeforeAnswer} bytes of 64 MiB: not read to the end first`);
  const over = await send({ port: r.port, method: 'POST', path: '/v1/screenshot', headers: GOOD, chunkedBytes: MAX_BODY_BYTES + 1 });
  t.equal(over.status, 413, 'limit + 1 chunked');
  const at = await send({ port: r.port, method: 'POST', path: '/v1/echo', headers: GOOD, chunkedBytes: MAX_BODY_BYTES });
  t.equal(at.status, 200, 'limit chunked');
  t.equal(at.body.length, MAX_BODY_BYTES);
  t.equal(r.renderer.seen.at(-1)?.headers['content-length'], String(MAX_BODY_BYTES), 'forwarded with its length');
  t.equal(r.policy.seen.length, 5, 'each key checked on the headers, the body never sent to policy');
  t.ok(r.policy.seen.every((s) => s.bodyLength === 0));
});

t.test('Expect: 100-continue with a body announced too large is refused unsent', async (t) => {
  const r = await rig(t);
  const a = await new Promise<{ status: number; continued: boolean }>((resolve, reject) => {
    let continued = false;
    const req = http.request({ host: '127.0.0.1', port: r.port, method: 'POST', path: '/v1/pdf', agent: false,
      headers: { ...BAD, expect: '100-continue', 'content-length': String(MAX_BODY_BYTES + 1) } });
    req.on('continue', () => (continued = true));
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => {
        resolve({ status: res.statusCode ?? 0, continued });
        req.destroy();
      });
    });
    req.on('error', reject);
    req.flushHeaders();
  });
  t.equal(a.status, 413);
  t.equal(a.continued, false, 'no 100 Continue was sent');
  t.equal(r.policy.seen.length, 0);
});

t.test('the check is made as Envoy makes it: method, /authz + path and query, two headers, no body', async (t) => {
  const r = await rig(t);
  const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
  await send({ port: r.port, method: 'POST', path: '/v1/echo?x=1', headers: { ...GOOD, traceparent, cookie: 'c=1', 'content-type': 'application/json' }, body: '{"a":1}' });
  const seen = r.policy.seen[0]!;
  t.equal(seen.method, 'POST');
  t.equal(seen.url, `${EXT_AUTHZ_PREFIX}/v1/echo?x=1`);
  t.equal(seen.bodyLength, 0);
  t.equal(seen.headers['authorization'], GOOD.authorization);
  t.equal(seen.headers['traceparent'], traceparent, 'client trace context passed on when tracing is off');
  t.equal(seen.headers['cookie'], undefined);
  t.equal(seen.headers['content-type'], undefined);
});

t.test('a denial is the client answer: status, body and the allowed headers only', async (t) => {
  const r = await rig(t);
  const a = await send({ port: r.port, path: '/v1/ping', headers: BAD });
  t.equal(a.status, 401);
  t.same(json(a.body), { error: 'unauthorized' });
  t.equal(a.headers['www-authenticate'], 'Bearer');
  t.equal(a.headers['x-policy-internal'], undefined);
  const limited = await send({ port: r.port, path: '/v1/ping', headers: { authorization: 'Bearer sk_busy_0123456789' } });
  t.equal(limited.status, 429);
  t.same(json(limited.body), { error: 'rate_limited', limit: 60, windowSec: 60, retryAfterSec: 17 });
  t.equal(limited.headers['retry-after'], '17');
  t.equal(limited.headers[RATELIMIT_LIMIT_HEADER], '60');
  t.equal(limited.headers[RATELIMIT_REMAINING_HEADER], '0');
  t.equal(r.renderer.seen.length, 0, 'a denied request never reaches the renderer');
});

t.test('allowed: lease headers go upstream, the key does not, forged lease headers are replaced', async (t) => {
  const r = await rig(t);
  const body = Buffer.from(JSON.stringify({ html: 'x'.repeat(100_000) }));
  const a = await send({ port: r.port, method: 'POST', path: '/v1/echo', body,
    headers: { ...GOOD, 'content-type': 'application/json', [LEASE_HEADER]: 'forged', [KEY_ID_HEADER]: 'forged' } });
  t.equal(a.status, 200);
  t.ok(a.body.equals(body), 'answer streamed back byte for byte');
  t.equal(a.headers['content-type'], 'image/png');
  t.equal(a.headers[CACHE_HEADER], 'miss');
  t.equal(a.headers[RATELIMIT_LIMIT_HEADER], '60', 'policy position wins over anything upstream says');
  t.equal(a.headers[RATELIMIT_REMAINING_HEADER], '41');
  const up = r.renderer.seen[0]!;
  t.equal(up.headers['authorization'], undefined, 'the key never goes upstream');
  t.equal(up.headers[LEASE_HEADER], 'lease-1');
  t.equal(up.headers[KEY_ID_HEADER], 'key-1');
  t.equal(up.headers['content-type'], 'application/json');
  t.equal(up.bodyLength, body.length);
});

t.test('a client that goes away mid-render aborts the upstream request at once', async (t) => {
  const r = await rig(t);
  await leaveWhen(r.port, GOOD, () => r.renderer.seen.length > 0);
  const started = Date.now();
  while (r.renderer.aborted.length === 0 && Date.now() - started < 5_000) await new Promise((res) => setTimeout(res, 10));
  t.same(r.renderer.aborted, ['/v1/slow']);
  t.ok(Date.now() - started < 2_000, 'aborted promptly');
  while (r.edge.inFlight() > 0 && Date.now() - started < 5_000) await new Promise((res) => setTimeout(res, 10));
  t.match(r.metrics.render(), /tintype_edge_client_aborts_total\{operation="other"\} 1/);
});

t.test('a client that goes away while policy is asked: nothing is routed, so nothing renders or is metered', async (t) => {
  const r = await rig(t);
  await leaveWhen(r.port, { authorization: 'Bearer sk_slow_0123456789' }, () => r.policy.seen.length > 0);
  const started = Date.now();
  while (r.edge.inFlight() > 0 && Date.now() - started < 5_000) await new Promise((res) => setTimeout(res, 10));
  t.equal(r.edge.inFlight(), 0, 'the request is over once policy answered');
  await new Promise((res) => setTimeout(res, 200));
  t.same(r.renderer.seen, [], 'the renderer never got the request');
  t.equal(r.policy.givenUp.length, 1, 'the check was given up with the client, so policy withdraws its grant');
  t.match(r.metrics.render(), /tintype_edge_client_aborts_total\{operation="other"\} 1/);
  t.notMatch(r.metrics.render(), /tintype_edge_authz_errors_total [1-9]/, 'not counted as policy failing');
});

t.test('policy or renderer unreachable: 503 busy, never a hang', async (t) => {
  const dead = 'http://127.0.0.1:1';
  const noPolicy = await rig(t, { policyUrl: dead });
  const a = await send({ port: noPolicy.port, path: '/v1/ping', headers: GOOD });
  t.equal(a.status, 503);
  t.same(json(a.body), { error: 'busy' });
  t.equal(a.headers['retry-after'], '1');
  const noRenderer = await rig(t, { rendererUrl: dead });
  const b = await send({ port: noRenderer.port, path: '/v1/ping', headers: GOOD });
  t.equal(b.status, 503);
  t.equal(b.headers[RATELIMIT_LIMIT_HEADER], '60', 'the position is on this answer too');
});

t.test('/openapi.json needs no key; other paths are 404; metrics are not public', async (t) => {
  const r = await rig(t);
  const doc = await send({ port: r.port, path: '/openapi.json' });
  t.equal(doc.status, 200);
  t.equal(json(doc.body).openapi, '3.1.0');
  for (const path of [METRICS_PATH, READY_PATH, LIVE_PATH, '/']) {
    const a = await send({ port: r.port, path });
    t.equal(a.status, 404, path);
  }
  t.equal(r.policy.seen.length, 0);
  const post = await send({ port: r.port, method: 'POST', path: '/openapi.json', body: '{}' });
  t.equal(post.status, 405);
});

t.test('admin listener: metrics and probes', async (t) => {
  const r = await rig(t);
  let ready = false;
  const admin = createAdminServer({ port: 0, registries: [r.metrics], ready: () => ready });
  await admin.start();
  t.teardown(() => admin.stop());
  await send({ port: r.port, path: '/v1/ping', headers: GOOD });
  const m = await send({ port: admin.port(), path: METRICS_PATH });
  t.match(m.body.toString(), /tintype_edge_requests_total\{operation="ping",status="200"\} 1/);
  t.equal((await send({ port: admin.port(), path: LIVE_PATH })).status, 200);
  t.equal((await send({ port: admin.port(), path: READY_PATH })).status, 503);
  ready = true;
  t.equal((await send({ port: admin.port(), path: READY_PATH })).status, 200);
});

t.test('stop lets an answer in flight finish, then refuses new connections', async (t) => {
  const r = await rig(t);
  const pending = send({ port: r.port, method: 'POST', path: '/v1/echo', headers: GOOD, body: 'abcd' });
  while (r.edge.inFlight() === 0) await new Promise((res) => setTimeout(res, 1));
  const stopping = r.edge.stop();
  const a = await pending;
  t.equal(a.status, 200);
  t.equal(a.body.toString(), 'abcd');
  await stopping;
  await t.rejects(send({ port: r.port, path: '/v1/ping', headers: GOOD }));
});

t.test('a renderer connection reset before the whole request was written: sent again once on a new one', async (t) => {
  let requests = 0;
  const renderer = http.createServer((req, res) => {
    requests += 1;
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2' });
      res.end('ok');
    });
  });
  // The first connection takes the request's first bytes, stops reading, so the rest of the body
  // waits at the edge, and is reset: the renderer never had the whole request.
  let connections = 0;
  const front = net.createServer((socket) => {
    connections += 1;
    if (connections > 1) return renderer.emit('connection', socket);
    socket.once('data', () => {
      socket.pause();
      setTimeout(() => socket.resetAndDestroy(), 100);
    });
  });
  await new Promise<void>((r) => front.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => {
    renderer.closeAllConnections();
    return new Promise((r) => front.close(() => r(undefined)));
  });
  const r = await rig(t, { rendererUrl: `http://127.0.0.1:${(front.address() as net.AddressInfo).port}` });
  const body = Buffer.alloc(4_000_000, 0x20);
  const a = await send({ port: r.port, method: 'POST', path: '/v1/echo', headers: { ...GOOD, 'content-type': 'application/json' }, body });
  t.equal(a.status, 200, 'answered, not 503 busy');
  t.equal(a.body.toString(), 'ok');
  t.equal(connections, 2, 'on a new connection');
  t.equal(requests, 1, 'the renderer had it once');
});

t.test('a renderer connection reset after the request was written: 503 busy, never sent again', async (t) => {
  let requests = 0;
  const perSocket = new WeakMap<object, number>();
  const renderer = http.createServer((req, res) => {
    requests += 1;
    const n = (perSocket.get(req.socket) ?? 0) + 1;
    perSocket.set(req.socket, n);
    req.resume();
    req.on('end', () => {
      // The second request on the kept-alive connection meets a renderer that dies with it.
      if (n === 2) return req.socket.destroy();
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2' });
      res.end('ok');
    });
  });
  await new Promise<void>((r) => renderer.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => {
    renderer.closeAllConnections();
    return new Promise((r) => renderer.close(() => r(undefined)));
  });
  const r = await rig(t, { rendererUrl: `http://127.0.0.1:${(renderer.address() as net.AddressInfo).port}` });
  t.equal((await send({ port: r.port, method: 'GET', path: '/v1/ping', headers: GOOD })).status, 200);
  const second = await send({ port: r.port, method: 'GET', path: '/v1/ping', headers: GOOD });
  t.equal(second.status, 503, 'the renderer had the request: as with Envoy, it is not sent again');
  t.same(json(second.body), { error: 'busy' });
  t.equal(requests, 2, 'each request reached the renderer once');
});
