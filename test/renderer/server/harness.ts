/**
 * A whole renderer for tests: a test site on a loopback address of its own, the real guard
 * (guard/) with GUARD_ALLOW_CIDRS opening that one address only, the real Chromium pool in
 * netns isolation, a cache, a recording settler, and the renderer server on port 0.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { loadConfig, type Config } from '../../../lib/config.ts';
import { createLogger, type Logger } from '../../../lib/log.ts';
import { Registry } from '../../../lib/metrics.ts';
import { LEASE_HEADER, operationFor, type Operation, type SettleRequest, type Settler } from '../../../lib/policy-contract.ts';
import { TEST_LEASE_ENV, signedLease, testGuardTokens } from '../../lib/leases.ts';
import { listenBesideService } from '../../lib/listen-beside.ts';
import { createGuard, guardSettings, judgeUrl, type Guard } from '../../../guard/index.ts';
import { createBrowserPool, type BrowserPool } from '../../../renderer/browser/index.ts';
import { FileCache, type RenderCache } from '../../../renderer/cache/index.ts';
import type { UrlJudge } from '../../../renderer/operations/index.ts';
import { createRendererServer, type OgDrawing, type RendererServer } from '../../../renderer/server/index.ts';

/** The loopback address test sites listen on; the only one the test guard opens. */
export const SITE_HOST = '127.0.0.3';

/** A test site: a handler on SITE_HOST, port 0. */
export interface Site {
  origin: string;
  /** Requests seen, by path. */
  hits: Map<string, number>;
  close(): Promise<void>;
}

export async function startSite(handler: http.RequestListener): Promise<Site> {
  const hits = new Map<string, number>();
  const server = http.createServer((req, res) => {
    const p = (req.url ?? '/').split('?', 1)[0]!;
    hits.set(p, (hits.get(p) ?? 0) + 1);
    handler(req, res);
  });
  const port = await listenBesideService(server, SITE_HOST);
  return {
    origin: `http://${SITE_HOST}:${port}`,
    hits,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A settler that records every outcome, and keeps claims as policy does (one attempt per lease). */
export interface RecordingSettler extends Settler {
  settled: SettleRequest[];
  /** Leases given back by a release, in order. */
  released: string[];
  /** Resolves once `n` outcomes have been recorded. */
  waitFor(n: number): Promise<SettleRequest[]>;
  /** Makes the next `n` settle attempts fail, as an unreachable policy would. */
  failNext(n: number): void;
  /** Settle attempts made, failed ones included. */
  attempts: number;
}

export function recordingSettler(): RecordingSettler {
  const settled: SettleRequest[] = [];
  const waiters: { n: number; resolve: () => void }[] = [];
  let failing = 0;
  const claims = new Map<string, 'held' | 'spent'>();
  return {
    settled,
    released: [],
    attempts: 0,
    async claim(lease) {
      const held = claims.get(lease);
      if (held !== undefined) return held;
      claims.set(lease, 'held');
      return 'claimed';
    },
    async release(lease) {
      if (claims.get(lease) === 'held') claims.delete(lease);
      this.released.push(lease);
    },
    failNext(n) {
      failing = n;
    },
    async settle(outcome) {
      this.attempts += 1;
      if (failing > 0) {
        failing -= 1;
        throw new Error('policy unreachable');
      }
      settled.push(outcome);
      claims.set(outcome.lease, 'spent');
      for (const w of waiters.filter((w) => settled.length >= w.n)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
    },
    async waitFor(n) {
      if (settled.length < n) await new Promise<void>((resolve) => waiters.push({ n, resolve }));
      return settled;
    },
  };
}

export interface HarnessOptions {
  /** Extra environment settings (TINTYPE_SLOTS, TINTYPE_RENDER_TIMEOUT_MS, …). */
  env?: Record<string, string>;
  /** A cache to use instead of a file cache in a temporary directory. */
  cache?: (dir: string, logger: Logger) => RenderCache;
  /** A pool to use instead of the real one (only for tests that must never reach a browser). */
  pool?: BrowserPool;
  og?: OgDrawing<any>;
  /** Where the pool looks for the guard, instead of the harness guard's socket (a missing guard). */
  poolGuardSocket?: string;
  /** Whether to wait for the pool's self-test (default true). */
  awaitSelfTest?: boolean;
  /** Receives every log line of the renderer, guard and pool, at debug level. */
  logSink?: (line: string) => void;
}

export interface Harness {
  config: Readonly<Config>;
  guard: Guard;
  pool: BrowserPool;
  cache: RenderCache;
  settler: RecordingSettler;
  server: RendererServer;
  registry: Registry;
  dir: string;
  /** Base URL of the renderer's public listener. */
  base: string;
  /** Base URL of the admin listener. */
  admin: string;
  close(): Promise<void>;
}

/** A fresh lease for `operation`, signed as policy would sign it, as the edge would send it. */
export function newLease(operation: Operation): string {
  return signedLease(operation);
}

/** Starts guard, pool, cache and server; waits until the pool's self-test passed. */
export async function startHarness(options: HarnessOptions = {}): Promise<Harness> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'tintype-renderer-'));
  const config = loadConfig({
    PORT: '0',
    TINTYPE_ADMIN_PORT: '0',
    TINTYPE_DATA_DIR: dir,
    TINTYPE_ISOLATION: 'netns',
    TINTYPE_LOG_LEVEL: 'error',
    GUARD_ALLOW_CIDRS: `${SITE_HOST}/32`,
    ...TEST_LEASE_ENV,
    ...options.env,
  });
  const logger = options.logSink !== undefined
    ? createLogger('renderer-test', { level: 'debug', sink: options.logSink })
    : createLogger('renderer-test', { level: config.logLevel });
  const registry = new Registry();
  const guardTokens = config.guardTokens ?? testGuardTokens;
  // The guard of the settings (GUARD_*), which checks each render's lease when the renderer opens
  // it (docs/security.md "Egress policy per key").
  const guard = createGuard({ ...guardSettings(config), socket: path.join(dir, 'guard.sock'), tokens: guardTokens, logger, stopGraceMs: 500 });
  await guard.start();
  const pool =
    options.pool ??
    createBrowserPool({
      config,
      logger,
      registry,
      guard: options.poolGuardSocket !== undefined
        ? { socketPath: options.poolGuardSocket, tokens: guardTokens }
        : { socketPath: path.join(dir, 'guard.sock'), tokens: guardTokens, tunnelsPerRender: config.guardMaxTunnelsPerRender, takeTally: (token) => guard.settledTally(token) },
    });
  const cache = options.cache?.(dir, logger) ?? new FileCache({ dir: path.join(dir, 'cache'), maxBytes: config.cacheMaxBytes, logger });
  await cache.start();
  const judge: UrlJudge = (url) => judgeUrl(url, guard.judge());
  const settler = recordingSettler();
  const server = createRendererServer({
    config, logger, registry, pool, cache, settler, judge, host: '127.0.0.1', ...(options.og ? { og: options.og } : {}),
  });
  await server.start();
  const starting = pool.start();
  if (options.awaitSelfTest !== false) {
    await starting;
    for (let i = 0; i < 600 && !pool.selfTestPassed(); i++) await new Promise((r) => setTimeout(r, 100));
    if (!pool.selfTestPassed()) throw new Error('the pool self-test did not pass within 60 s');
  } else {
    starting.catch(() => {});
  }
  return {
    config, guard, pool, cache, settler, server, registry, dir,
    base: `http://127.0.0.1:${server.address().port}`,
    admin: `http://127.0.0.1:${server.adminAddress().port}`,
    async close() {
      await server.stop();
      await pool.stop();
      await cache.stop();
      await guard.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** An answer read whole. */
export interface Answer {
  status: number;
  headers: Headers;
  body: Buffer;
  json<T = any>(): T;
}

/** POSTs `body` as JSON (or a raw string with `contentType`) to the renderer with a lease. */
export async function post(
  h: Pick<Harness, 'base'>,
  operation: string,
  body: unknown,
  options: { contentType?: string; raw?: string; lease?: string | null; signal?: AbortSignal; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { ...options.headers, 'content-type': options.contentType ?? 'application/json' };
  if (options.lease !== null) headers[LEASE_HEADER] = options.lease ?? newLease(operation as Operation);
  const res = await fetch(`${h.base}/v1/${operation}`, {
    method: 'POST',
    headers,
    body: options.raw ?? JSON.stringify(body),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  return answerOf(res);
}

/** GETs a /v1 path with a lease. */
export async function get(
  h: Pick<Harness, 'base'>, pathAndQuery: string, lease: string | null = newLease(operationFor(pathAndQuery) ?? 'ping'),
): Promise<Answer> {
  const res = await fetch(`${h.base}${pathAndQuery}`, { headers: lease === null ? {} : { [LEASE_HEADER]: lease } });
  return answerOf(res);
}

async function answerOf(res: Response): Promise<Answer> {
  const body = Buffer.from(await res.arrayBuffer());
  return { status: res.status, headers: res.headers, body, json: () => JSON.parse(body.toString('utf8')) };
}

/** Width and height of a PNG, read from its IHDR. */
export function pngSize(png: Buffer): { width: number; height: number } {
  if (png.subarray(1, 4).toString('latin1') !== 'PNG') throw new Error('not a PNG');
  return { width: png.readUInt32BE(16), height: png.readUInt32BE(20) };
}

/** PNG colour type (6 = RGBA, 2 = RGB). */
export function pngColourType(png: Buffer): number {
  return png[25]!;
}

/** The [r, g, b, a] of one pixel of a PNG. */
export async function pngPixel(png: Buffer, x: number, y: number): Promise<[number, number, number, number]> {
  const { decodePNGFromStream } = await import('pureimage');
  const { Readable } = await import('node:stream');
  const bitmap = await decodePNGFromStream(Readable.from([png]) as any);
  const p = bitmap.getPixelRGBA_separate(x, y);
  return [p[0]!, p[1]!, p[2]!, p[3]!];
}

/** Width and height of a JPEG, read from its first start-of-frame marker. */
export function jpegSize(jpeg: Buffer): { width: number; height: number } {
  let i = 2;
  while (i < jpeg.length) {
    const marker = jpeg[i + 1]!;
    const length = jpeg.readUInt16BE(i + 2);
    if (marker >= 0xc0 && marker <= 0xc3) return { height: jpeg.readUInt16BE(i + 5), width: jpeg.readUInt16BE(i + 7) };
    i += 2 + length;
  }
  throw new Error('no start-of-frame in the JPEG');
}

/** Polls `condition` every 20 ms until it holds, or throws after `ms`. */
export async function until(condition: () => boolean, what: string, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
