/**
 * Hostile traffic through `tintype start` changes nothing it should not (the project's rule for
 * bad input): a storm of malformed, oversized, abandoned and ordinary requests, several at once,
 * in a seeded random order. Afterwards the process still runs and renders, no slot and no lease
 * is held, the ledger holds exactly one metered record for every metered answer a client
 * received and nothing else metered, no answer is a 500, every error of the service is its JSON
 * body, and no URL, markup or key the requests carried is in an answer or in the log.
 * It runs once with the file cache and once with Redis (the machine's, on a database of its own).
 * Real processes and real Chromium; the only pages rendered are on 127.0.0.2.
 */
import t, { type Test } from 'tap';
import net from 'node:net';
import { MAX_BODY_BYTES } from '../../lib/policy-contract.ts';
import type { Answer } from '../envoy/client.ts';
import { bearer, cleanup, jsonWith, startService, type Service } from './service.ts';
import { random } from './reliability/load.ts';
import { startNxdomainDns, startSite, type Site } from './site.ts';

const RENDER_TIMEOUT_MS = 4000;
/** In every URL, markup and made-up key the storm sends; looked for in answers and the log. */
const MARKER = 'stormmarker' + Math.random().toString(36).slice(2, 10);
const SEED = Number(process.env.TINTYPE_STORM_SEED ?? Date.now() % 100_000);
/** Requests in flight at once: more than the render slots, as many as the key may have. */
const AT_ONCE = 6;
/** Statuses the service may answer; anything else (a 500 above all) is a failure. */
const ALLOWED = new Set([200, 400, 401, 404, 405, 413, 422, 429, 431, 502, 503, 504]);
const METERED = new Set([200, 502, 504]);
/** Redis for the second run; a database number of its own keeps its entries apart. */
const REDIS = 'redis://127.0.0.1:6379/7';

/** What a client of the storm saw. */
type Seen =
  | { kind: 'answer'; path: string; status: number; body: Buffer; fromParser: boolean }
  | { kind: 'abandoned' };

let svc: Service;
let site: Site;
let dns: { server: string; close(): Promise<void> };


/**
 * Writes raw bytes on a new connection and reads until the server closes it or `waitMs` passes;
 * the status of the first answer, if one came. `close` ends the connection after writing.
 */
function raw(port: number, bytes: Buffer, close: boolean, waitMs = 3000): Promise<Seen> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.write(bytes);
      if (close) socket.end();
    });
    const finish = (): void => {
      clearTimeout(timer);
      socket.destroy();
      const text = Buffer.concat(chunks);
      const m = /^HTTP\/1\.1 (\d{3})/.exec(text.toString('latin1'));
      if (m === null) return resolve({ kind: 'abandoned' });
      const body = text.subarray(text.indexOf('\r\n\r\n') + 4);
      resolve({ kind: 'answer', path: 'raw', status: Number(m[1]), body, fromParser: true });
    };
    const timer = setTimeout(finish, waitMs);
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('close', finish);
    socket.on('error', () => undefined);
  });
}

/** A request through the ordinary client. */
async function call(method: string, path: string, headers: Record<string, string>, body?: string | Buffer): Promise<Seen> {
  try {
    const a: Answer = await svc.call({ method, path, headers, ...(body === undefined ? {} : { body }) });
    return { kind: 'answer', path, status: a.status, body: a.body, fromParser: false };
  } catch {
    return { kind: 'abandoned' };
  }
}

/** A render the client walks away from while Chromium still waits for an image that never comes. */
function abandonedRender(secret: string, afterMs: number): Promise<Seen> {
  const body = JSON.stringify({ html: `<p>${MARKER} ${afterMs}</p><img src="${site.base}/hang.png">`, width: 30, height: 30 });
  const head = `POST /v1/html-to-image HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${secret}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n`;
  return raw(svc.port, Buffer.from(head + body), false, afterMs);
}

t.before(async () => {
  site = await startSite();
  dns = await startNxdomainDns();
});

t.teardown(async () => {
  await site.close();
  await dns.close();
  cleanup();
});

for (const cache of ['file', 'redis'] as const) {
  t.test(`a storm of hostile and ordinary requests, ${cache} cache (seed ${SEED})`, async (t) => {
    svc = await startService({
      env: {
        TINTYPE_SLOTS: '2',
        TINTYPE_RENDER_TIMEOUT_MS: String(RENDER_TIMEOUT_MS),
        GUARD_ALLOW_CIDRS: '127.0.0.2/32',
        GUARD_DNS_SERVERS: dns.server,
        TINTYPE_LOG_LEVEL: 'debug',
        ...(cache === 'redis' ? { REDIS_URL: REDIS } : {}),
      },
      plans: { storm: { monthlyQuota: 100_000, perMinute: 100_000, concurrentRenders: AT_ONCE } },
    });
    t.teardown(async () => {
      await svc.signal('SIGTERM');
    });
    await storm(t);
  });
}

/** The storm against the running `svc`, and what must hold after it. */
async function storm(t: Test): Promise<void> {
  const k = await svc.key('storm');
  const control = await svc.key('storm');
  const h = jsonWith(k.secret);
  const post = (path: string, body: string | Buffer, headers = h): (() => Promise<Seen>) => () => call('POST', path, headers, body);
  const get = (path: string, headers: Record<string, string> = bearer(k.secret)): (() => Promise<Seen>) => () => call('GET', path, headers);
  const fakeKey = `sk_${MARKER}0123456789abcdef01234567`;
  let unique = 0;
  const html = (): string => JSON.stringify({ html: `<p>${MARKER} ${(unique += 1)}</p>`, width: 40, height: 30 });

  const cases: Array<[string, () => Promise<Seen>]> = [
    // Not HTTP, or HTTP the parser refuses: the listener's own 400 or 431, nothing reaches policy.
    ['garbage bytes', () => raw(svc.port, Buffer.from(`\u0000\u0001\u00ff${MARKER}\r\n\r\n`, 'latin1'), true)],
    ['header over the parser limit', () => raw(svc.port, Buffer.from(`GET /v1/ping HTTP/1.1\r\nhost: x\r\nx-big: ${'a'.repeat(100_000)}\r\n\r\n`), false)],
    ['content-length and chunked at once', () => raw(svc.port, Buffer.from(`POST /v1/pdf HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${k.secret}\r\ncontent-length: 4\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n`), false)],
    ['body cut short, then gone', () => raw(svc.port, Buffer.from(`POST /v1/pdf HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${k.secret}\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{"html":"${MARKER}`), true, 500)],
    ['headers only, then gone', () => raw(svc.port, Buffer.from(`POST /v1/html-to-image HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${k.secret}\r\n`), true, 500)],
    ['oversized body', post('/v1/pdf', Buffer.alloc(MAX_BODY_BYTES + 1, 0x20))],
    // Bodies that are not what the operation takes.
    ['truncated JSON', post('/v1/pdf', `{"html":"${MARKER}`)],
    ['JSON array', post('/v1/html-to-image', '[]')],
    ['JSON null', post('/v1/pdf', 'null')],
    ['JSON string', post('/v1/screenshot', `"${MARKER}"`)],
    ['deeply nested JSON', post('/v1/html-to-image', `{"html":${'['.repeat(10_000)}${']'.repeat(10_000)}}`)],
    ['__proto__ and constructor fields', post('/v1/html-to-image', `{"__proto__":{"width":5},"constructor":{"prototype":{"x":1}},"html":"${MARKER}"}`)],
    ['number out of range', post('/v1/html-to-image', `{"html":"${MARKER}","width":1e309}`)],
    ['fractional and negative sizes', post('/v1/screenshot', JSON.stringify({ url: `${site.base}/page/${MARKER}`, width: 2000.5, height: -0 }))],
    ['lone surrogate and NUL in markup', post('/v1/pdf', `{"html":"\\ud800${MARKER}\\u0000"}`)],
    ['invalid UTF-8 body', post('/v1/pdf', Buffer.concat([Buffer.from('{"html":"'), Buffer.from([0xc3, 0x28, 0xff]), Buffer.from('"}')]))],
    ['text/plain body', post('/v1/pdf', JSON.stringify({ html: MARKER }), { ...bearer(k.secret), 'content-type': 'text/plain' })],
    ['latin1 charset', post('/v1/pdf', JSON.stringify({ html: MARKER }), { ...bearer(k.secret), 'content-type': 'application/json; charset=latin1' })],
    ['pageRanges injection', post('/v1/pdf', JSON.stringify({ html: `<p>${MARKER}</p>`, pageRanges: '1-2;rm -rf' }))],
    ['pageRanges past the end', post('/v1/pdf', JSON.stringify({ html: `<p>${MARKER} ranges</p>`, pageRanges: '7-9' }))],
    // Addresses the guard judges.
    ['file URL', post('/v1/screenshot', JSON.stringify({ url: `file:///etc/passwd?${MARKER}` }))],
    ['javascript URL', post('/v1/screenshot', JSON.stringify({ url: `javascript:alert('${MARKER}')` }))],
    ['data URL', post('/v1/pdf', JSON.stringify({ url: `data:text/html,${MARKER}` }))],
    ['link-local with a zone', post('/v1/screenshot', JSON.stringify({ url: `http://[fe80::1%25eth0]/${MARKER}` }))],
    ['loopback spelled in hex', post('/v1/screenshot', JSON.stringify({ url: `http://0x7f.1/${MARKER}` }))],
    ['metadata address', post('/v1/screenshot', JSON.stringify({ url: `http://169.254.169.254/latest/${MARKER}` }))],
    ['credentials in the URL', post('/v1/screenshot', JSON.stringify({ url: `http://user:${MARKER}@127.0.0.2/` }))],
    ['a name that does not resolve', post('/v1/screenshot', JSON.stringify({ url: `http://${MARKER}.example/` }))],
    ['URL past 2048 characters', post('/v1/screenshot', JSON.stringify({ url: `http://${'a'.repeat(2100)}.example/${MARKER}` }))],
    // Keys and paths.
    ['made-up key', get('/v1/ping', bearer(fakeKey))],
    ['huge bearer', get('/v1/ping', bearer(`${MARKER}${'x'.repeat(8000)}`))],
    ['basic auth', get('/v1/ping', { authorization: `Basic ${Buffer.from(`${MARKER}:x`).toString('base64')}` })],
    ['key in the query', () => call('GET', `/v1/ping?api_key=${k.secret}`, {})],
    ['unknown operation', get(`/v1/${MARKER}`)],
    ['dot segments', get('/v1/../v1/ping')],
    ['wrong method', () => call('PUT', '/v1/pdf', h, '{}')],
    ['TRACE', () => call('TRACE', '/v1/ping', bearer(k.secret))],
    ['og with a broken escape', get('/v1/og?template=title&title=%E0%A4%A')],
    ['og with a repeated parameter', get('/v1/og?template=title&title=a&title=b')],
    ['og with a long query', get(`/v1/og?template=title&title=${'w'.repeat(9000)}`)],
    // Renders a client walks away from, and one that runs out its budget.
    ...Array.from({ length: 4 }, (_, i): [string, () => Promise<Seen>] => [`abandoned render ${i}`, () => abandonedRender(k.secret, 300 + 100 * i)]),
    ['render past its budget', post('/v1/html-to-image', JSON.stringify({ html: `<p>${MARKER}</p><img src="${site.base}/hang.png">`, width: 20, height: 20 }))],
    ['a target that cannot be rendered', post('/v1/screenshot', JSON.stringify({ url: `${site.base}/download?${MARKER}` }))],
  ];
  // Ordinary traffic among it: new renders, repeats of one (cache hits), cards, pings.
  const repeated = JSON.stringify({ html: `<b>${MARKER} again</b>`, width: 30, height: 30 });
  for (let i = 0; i < 14; i++) {
    cases.push([`html-to-image ${i}`, () => post('/v1/html-to-image', html())()]);
    cases.push([`repeat ${i}`, post('/v1/html-to-image', repeated)]);
    cases.push([`ping ${i}`, get('/v1/ping')]);
  }
  for (let i = 0; i < 4; i++) {
    cases.push([`pdf ${i}`, post('/v1/pdf', JSON.stringify({ html: `<h1>${MARKER} pdf ${i}</h1>` }))]);
    cases.push([`screenshot ${i}`, post('/v1/screenshot', JSON.stringify({ url: `${site.base}/page/${MARKER}-${i}`, width: 50, height: 40 }))]);
    cases.push([`og ${i}`, get(`/v1/og?template=stat&title=storm&statValue=${i}&statLabel=cards`)]);
  }

  // Seeded, so a failing order can be replayed with TINTYPE_STORM_SEED.
  const rand = random(SEED);
  for (let i = cases.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [cases[i], cases[j]] = [cases[j]!, cases[i]!];
  }
  const seen: Array<[string, Seen]> = [];
  let next = 0;
  await Promise.all(Array.from({ length: AT_ONCE }, async () => {
    while (next < cases.length) {
      const [name, run] = cases[next++]!;
      seen.push([name, await run()]);
    }
  }));

  const answers = seen.filter((s): s is [string, Extract<Seen, { kind: 'answer' }>] => s[1].kind === 'answer');
  t.ok(answers.length >= cases.length - 8, `answers to all but the abandoned (${answers.length} of ${cases.length})`);
  for (const [name, a] of answers) {
    if (!ALLOWED.has(a.status)) t.fail(`${name}: status ${a.status} is not one the service answers`);
    t.notOk(a.body.includes(MARKER), `${name}: nothing it sent is echoed`);
    t.notOk(a.body.includes(k.secret), `${name}: the key is not echoed`);
    if (a.fromParser || a.status < 400 || a.path === 'raw') continue;
    let error: unknown;
    try {
      error = (JSON.parse(a.body.toString('utf8')) as { error?: unknown }).error;
    } catch {
      error = undefined;
    }
    t.ok(error !== undefined, `${name}: a ${a.status} carries the JSON error body`);
  }
  const counts = new Map<number, number>();
  for (const [, a] of answers) counts.set(a.status, (counts.get(a.status) ?? 0) + 1);
  t.comment(`raw: ${answers.filter(([, a]) => a.path === 'raw').map(([n, a]) => `${n}=${a.status}`).join(', ')}`);
  t.comment(`statuses: ${[...counts].sort((x, y) => x[0] - y[0]).map(([s, n]) => `${s}×${n}`).join(' ')}`);
  t.ok((counts.get(200) ?? 0) > 0 && (counts.get(400) ?? 0) > 0 && (counts.get(422) ?? 0) > 0, 'the mix produced renders, 400s and 422s');

  await svc.leasesClosed(k.id);
  t.pass('every lease the storm took is closed');
  const meteredAnswers = answers.filter(([, a]) => a.path !== 'raw' && METERED.has(a.status) && !a.fromParser).map(([, a]) => a.status);
  const rows = svc.ledger(k.id);
  const meteredRows = rows.filter((r) => r.metered === 1).map((r) => r.status);
  t.same([...meteredRows].sort(), [...meteredAnswers].sort(), 'one metered record per metered answer received, and no other');
  t.equal(svc.used(k.id), meteredRows.length, 'quota spent = metered records');
  t.comment(`ledger: ${rows.length} records, ${meteredRows.length} metered, ${rows.filter((r) => r.status === 499).length} abandoned`);
  t.notOk(rows.some((r) => r.metered === 1 && r.status === 499), 'no abandoned render is metered');

  const metrics = await (await fetch(`http://127.0.0.1:${svc.adminPort}/metrics`)).text();
  t.match(metrics, /^tintype_render_slots_busy 0$/m, 'no render slot is held');
  const ping = await svc.call({ path: '/v1/ping', headers: bearer(control.secret) });
  t.equal(ping.status, 200, 'the service still answers');
  const render = await svc.call({ method: 'POST', path: '/v1/html-to-image', headers: jsonWith(control.secret), body: JSON.stringify({ html: '<i>after</i>', width: 20, height: 20 }) });
  t.equal(render.status, 200, 'and still renders');
  t.notOk(svc.stderr().includes(MARKER), 'no URL, markup or made-up key of the storm is in the log');
  t.notOk(svc.stderr().includes(k.secret), 'the key is not in the log');
}
