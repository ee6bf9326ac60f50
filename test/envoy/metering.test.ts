/**
 * The meter through the embedded edge, with the real policy (SQLite), real renderer servers,
 * the real file cache and real settles over HTTP; only the Chromium pool is a stand-in (these
 * answers never need a browser: a cache hit, a busy slot, a fixed image).
 * - An answer is settled before it leaves, so a reader slower than its lease is metered, and a
 *   caller's next call finds the place of the last one free.
 * - The edge cuts an answer still streaming at the render budget + margin; it stays metered.
 * - A renderer's 503 leaves the lease open and the edge tries it once on another renderer,
 *   which settles it: metered exactly once.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { createEdge, type Edge } from '../../envoy/edge/edge.ts';
import { loadConfig } from '../../lib/config.ts';
import { createLogger } from '../../lib/log.ts';
import { Registry } from '../../lib/metrics.ts';
import { agentSettler } from '../../lib/policy-contract.ts';
import { createKey } from '../../policy/keys.ts';
import { createPolicyServer, type PolicyServer } from '../../policy/server.ts';
import { FileCache } from '../../renderer/cache/index.ts';
import { htmlToImageKey } from '../../renderer/cache/keys.ts';
import { parseHtmlToImage } from '../../renderer/schemas/index.ts';
import { createRendererServer, type RendererServer } from '../../renderer/server/index.ts';
import { TEST_LEASE_ENV, TEST_RENDERER_TOKEN } from '../lib/leases.ts';
import { STAND_IN_PNG, standInPool, type StandInPool } from '../renderer/stand-in-pool.ts';

const PLANS = {
  tiny: { monthlyQuota: 2, perMinute: 1_000, concurrentRenders: 4 },
  single: { monthlyQuota: 1_000, perMinute: 1_000, concurrentRenders: 1 },
};
/** Larger than every buffer between the renderer and a client that does not read (sockets, pipes). */
const LARGE = 20 * 1024 * 1024;
const quiet = createLogger('metering-test', { level: 'error' });

/** The real time, moved on by `advance`. */
function shiftedClock() {
  let offset = 0;
  return {
    now: () => Date.now() + offset,
    advance(ms: number) {
      offset += ms;
    },
  };
}

interface Rig {
  policy: PolicyServer;
  clock: ReturnType<typeof shiftedClock>;
  renderers: { server: RendererServer; pool: StandInPool; cache: FileCache }[];
  edge: Edge;
  port: number;
  secret: string;
  keyId: string;
}

async function rig(
  t: { teardown(fn: () => unknown): void },
  o: {
    renderers: number; renderTimeoutMs?: number; leaseGraceMs?: number; upstreamMarginMs?: number;
    plan?: keyof typeof PLANS;
    /** How long each settle takes on its way to policy (a busy network or a loaded policy). */
    settleDelayMs?: number;
  },
): Promise<Rig> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'tintype-metering-'));
  const config = loadConfig({
    PORT: '0',
    TINTYPE_ADMIN_PORT: '0',
    TINTYPE_DATA_DIR: dir,
    ...TEST_LEASE_ENV,
    TINTYPE_RENDER_TIMEOUT_MS: String(o.renderTimeoutMs ?? 30_000),
    TINTYPE_LEASE_GRACE_MS: String(o.leaseGraceMs ?? 0),
    TINTYPE_LOG_LEVEL: 'error',
  });
  // Policy's time runs with the renderer's, and the test can move it on.
  const clock = shiftedClock();
  const policy = createPolicyServer({ config, logger: quiet, plans: PLANS, clock: clock.now, host: '127.0.0.1' });
  await policy.start();
  const policyUrl = `http://127.0.0.1:${policy.address().port}`;
  const renderers: Rig['renderers'] = [];
  const settlers: { close(): void }[] = [];
  for (let i = 0; i < o.renderers; i++) {
    const pool = standInPool();
    const cache = new FileCache({ dir: path.join(dir, `cache-${i}`), maxBytes: 1 << 30, logger: quiet });
    await cache.start();
    const settler = agentSettler(`http://127.0.0.1:${policy.settleAddress().port}`, { token: TEST_RENDERER_TOKEN });
    settlers.push(settler);
    const delayed = {
      claim: settler.claim,
      release: settler.release,
      async settle(outcome: Parameters<typeof settler.settle>[0]) {
        await new Promise((r) => setTimeout(r, o.settleDelayMs ?? 0));
        return settler.settle(outcome);
      },
    };
    const server = createRendererServer({
      config, logger: quiet, registry: new Registry(), pool, cache, settler: delayed, judge: async () => ({ ok: true }), host: '127.0.0.1',
    });
    await server.start();
    renderers.push({ server, pool, cache });
  }
  const edge = createEdge({
    policyUrl,
    rendererUrls: renderers.map((r) => `http://127.0.0.1:${r.server.address().port}`),
    host: '127.0.0.1',
    port: 0,
    openapi: Buffer.from('{}'),
    renderTimeoutMs: config.renderTimeoutMs,
    ...(o.upstreamMarginMs !== undefined ? { upstreamMarginMs: o.upstreamMarginMs } : {}),
    logger: quiet,
  });
  await edge.start();
  const key = await createKey(policy.store, PLANS, { plan: o.plan ?? 'tiny', now: clock.now() });
  t.teardown(async () => {
    await edge.stop();
    for (const r of renderers) {
      await r.server.stop();
      await r.cache.stop();
    }
    for (const s of settlers) s.close();
    await policy.stop();
    await rm(dir, { recursive: true, force: true });
  });
  return { policy, clock, renderers, edge, port: edge.port(), secret: key.secret, keyId: key.id };
}

const BODY = { html: `<p>metering ${process.pid}</p>`, width: 64, height: 64 };

/** Puts a large output in a renderer's cache, so a call answers it without any browser. */
async function cacheLarge(cache: FileCache): Promise<void> {
  const key = htmlToImageKey(await parseHtmlToImage(BODY));
  await cache.set(key, { body: Buffer.alloc(LARGE, 0x5a), contentType: 'image/png' });
}

interface Reader {
  status: Promise<number>;
  /** Reads the rest; resolves with the bytes received and whether the answer ended whole. */
  finish(): Promise<{ bytes: number; whole: boolean }>;
}

/** Calls html-to-image through the edge and reads nothing of the answer until finish(). */
function slowReader(port: number, secret: string): Reader {
  const payload = JSON.stringify(BODY);
  let received = 0;
  let res: http.IncomingMessage | undefined;
  const status = new Promise<number>((resolve, reject) => {
    const req = http.request({
      host: '127.0.0.1', port, method: 'POST', path: '/v1/html-to-image', agent: false,
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) },
    }, (r) => {
      res = r;
      r.pause();
      resolve(r.statusCode ?? 0);
    });
    req.once('error', reject);
    req.end(payload);
  });
  return {
    status,
    finish: () => new Promise((resolve) => {
      const r = res!;
      r.on('data', (c: Buffer) => (received += c.length));
      r.once('end', () => resolve({ bytes: received, whole: r.complete }));
      r.once('error', () => resolve({ bytes: received, whole: false }));
      r.once('aborted', () => resolve({ bytes: received, whole: false }));
      r.once('close', () => resolve({ bytes: received, whole: r.complete }));
      r.resume();
    }),
  };
}

/** A whole call through the edge. */
async function call(port: number, secret: string, body: unknown = BODY): Promise<{ status: number; body: Buffer }> {
  const res = await fetch(`http://127.0.0.1:${port}/v1/html-to-image`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: Buffer.from(await res.arrayBuffer()) };
}

/** Waits, polling, up to `ms` for `condition`; answers whether it came (the assertion is the caller's). */
async function eventually(condition: () => Promise<boolean> | boolean, ms = 10_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await condition()) return true;
    await new Promise((r) => setTimeout(r, 25));
  }
  return condition();
}

t.test('a reader slower than its lease is metered exactly once; a quota of 2 then refuses the third call', async (t) => {
  const r = await rig(t, { renderers: 1 });
  await cacheLarge(r.renderers[0]!.cache);
  const slow = slowReader(r.port, r.secret);
  t.equal(await slow.status, 200, 'the answer is sent');
  t.ok(await eventually(async () => (await r.policy.store.openLeases(r.keyId)) === 0),
    'settled while the client has read almost nothing');
  // The lease's whole life passes while the client still reads; the sweep finds nothing to expire.
  r.clock.advance(60_000);
  await r.policy.sweep();
  const read = await slow.finish();
  t.same(read, { bytes: LARGE, whole: true }, 'the client got the whole answer');
  t.match(await r.policy.store.usage(r.keyId), [{ outcome: 'settled', status: 200, cache: 'hit', metered: true }]);
  t.equal((await r.policy.store.usage(r.keyId)).length, 1, 'one record');

  const second = await call(r.port, r.secret);
  t.equal(second.status, 200, 'the second call of the month');
  const third = await call(r.port, r.secret);
  t.equal(third.status, 429, 'the third is over the quota of 2');
  t.match(JSON.parse(third.body.toString('utf8')), { error: 'quota_exceeded', limit: 2 });
});

t.test('the edge cuts an answer still streaming at the render budget + margin; it stays metered once', async (t) => {
  // The lease outlives the cut by far, so only the edge's timer can end the answer.
  const r = await rig(t, { renderers: 1, renderTimeoutMs: 1_000, leaseGraceMs: 60_000, upstreamMarginMs: 500 });
  await cacheLarge(r.renderers[0]!.cache);
  const slow = slowReader(r.port, r.secret);
  t.equal(await slow.status, 200);
  t.ok(await eventually(() => r.edge.inFlight() === 0), 'the edge let go of the answer although the client never read');
  const read = await slow.finish();
  t.equal(read.whole, false, 'the client saw the answer cut');
  t.ok(read.bytes < LARGE, `${read.bytes} of ${LARGE} bytes arrived`);
  t.ok(await eventually(async () => (await r.policy.store.openLeases(r.keyId)) === 0), 'the lease is closed');
  t.match(await r.policy.store.usage(r.keyId), [{ outcome: 'settled', status: 200, metered: true }], 'settled as what it was');
  t.equal((await r.policy.store.usage(r.keyId)).length, 1, 'once');
});

t.test("a busy renderer's render is retried on another one with the same lease, metered exactly once", async (t) => {
  const r = await rig(t, { renderers: 2 });
  const [a, b] = r.renderers as [Rig['renderers'][0], Rig['renderers'][0]];
  // The edge takes renderers in turn: the first call goes to `a` first.
  a.pool.busy = true;
  const first = await call(r.port, r.secret);
  t.equal(first.status, 200, 'answered by the other renderer');
  t.same(first.body, STAND_IN_PNG);
  t.equal(b.pool.renders, 1, 'rendered once, on the other renderer');
  t.ok(await eventually(async () => (await r.policy.store.openLeases(r.keyId)) === 0), 'the lease is settled');
  t.match(await r.policy.store.usage(r.keyId), [{ outcome: 'settled', status: 200, cache: 'miss', metered: true }], 'metered');
  t.equal((await r.policy.store.usage(r.keyId)).length, 1, 'exactly once');
  t.equal(await r.policy.store.inFlight(r.keyId), 0, 'its render place is free');

  // Both busy: the client gets the second renderer's 503, which closes the lease unmetered.
  b.pool.busy = true;
  const both = await call(r.port, r.secret, { ...BODY, width: 65 });
  t.equal(both.status, 503);
  t.same(JSON.parse(both.body.toString('utf8')), { error: 'busy' });
  t.ok(await eventually(async () => (await r.policy.store.openLeases(r.keyId)) === 0), 'the last attempt closed the lease');
  t.equal((await r.policy.store.usage(r.keyId)).length, 1, 'no record for the 503');
  t.equal(await r.policy.store.inFlight(r.keyId), 0, 'and no place held');
  const month = new Date(r.clock.now()).toISOString().slice(0, 7);
  t.equal(await r.policy.store.monthUsed(r.keyId, month), 1, 'its reservation given back');
});

t.test("an answer leaves once its settle is done: a one-render key's next call is never 429", async (t) => {
  // Settles take long enough that an answer sent before its settle would beat it to policy.
  const r = await rig(t, { renderers: 1, plan: 'single', settleDelayMs: 150 });
  const answers: number[] = [];
  for (let i = 0; i < 6; i++) {
    // A bad body (400, not metered) and a render (200, metered) in turn, back to back.
    const a = await call(r.port, r.secret, i % 2 === 0 ? { html: '' } : { ...BODY, width: 100 + i });
    answers.push(a.status);
    t.equal(await r.policy.store.openLeases(r.keyId), 0, `call ${i + 1}: its lease was settled before its answer came`);
  }
  t.same(answers, [400, 200, 400, 200, 400, 200], 'no call met 429 concurrent_limit');
  t.equal((await r.policy.store.usage(r.keyId)).filter((u) => u.metered).length, 3, 'the three renders metered');
});
