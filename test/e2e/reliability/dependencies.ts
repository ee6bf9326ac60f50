/**
 * Dependencies lost under load, each on an instance of its own:
 * - PostgreSQL stopped and started: policy answers 503 `busy` meanwhile, never a 500, and serves
 *   again without a restart; nothing is metered twice.
 * - Redis stopped and started: renders still answer from Chromium; the cache is skipped, not failed.
 * - The data directory's disk full (a small tmpfs, as root): renders still answer; the file
 *   cache is skipped.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cleanup, jsonWith, type Service } from '../service.ts';
import { send } from '../../envoy/client.ts';
import { loadKeys, startLoadService, within } from './fleet.ts';
import { startPostgres, startRedis } from './instances.ts';
import { runLoad } from './load.ts';
import { meteredByKey } from './readings.ts';

export interface DependencyFigures {
  /** 5xx other than 503 `busy` while PostgreSQL was away and after. */
  pg_outage_5xx_other: number;
  /** Metered records beyond the metered answers clients received. */
  pg_outage_double_counted: number;
  /** Requests in flight when PostgreSQL stopped: the only ones whose metering can be off. */
  pg_outage_in_flight: number;
  /** Renders that failed while Redis was away (anything but 200 or a 429/503 of the limits). */
  redis_outage_failed: number;
  /** Renders that failed while the data directory's disk was full. */
  disk_full_failed: number;
  /** From PostgreSQL's restart to the first 200. */
  recovery_ms: number;
}

/** The default render budget: a render slowed by a busy machine must not count as failed by the outage. */
const FULL_BUDGET = { TINTYPE_RENDER_TIMEOUT_MS: '30000' };

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A render that is always a miss: its status, and its error code when it has one. */
async function uniqueRender(svc: Service, secret: string, n: number): Promise<string> {
  const body = JSON.stringify({ html: `<p>dependency ${n} ${process.hrtime.bigint()}</p>`, width: 200, height: 100 });
  const a = await send({ port: svc.port, method: 'POST', path: '/v1/html-to-image', headers: jsonWith(secret), body });
  let error: unknown;
  try {
    error = (JSON.parse(a.body.toString('utf8')) as { error?: unknown }).error;
  } catch {
    // an image, or no JSON: the status alone
  }
  return typeof error === 'string' ? `${a.status} ${error}` : String(a.status);
}

export async function postgresOutage(o: { clients: number; phaseMs: number; seed: number }): Promise<Pick<DependencyFigures, 'pg_outage_5xx_other' | 'pg_outage_double_counted' | 'pg_outage_in_flight' | 'recovery_ms'>> {
  const pg = await startPostgres();
  const svc = await startLoadService({ env: { DATABASE_URL: pg.url } });
  try {
    const keys = await loadKeys(svc, 3);
    const load = runLoad({ port: svc.port, keys, clients: o.clients, durationMs: o.phaseMs * 4, seed: o.seed, requestTimeoutMs: 30_000 });
    await sleep(o.phaseMs);
    const inFlight = load.outstanding();
    await pg.stop();
    await sleep(o.phaseMs);
    await pg.start();
    const restarted = performance.now();
    let recovered = Number.NaN;
    await within(o.phaseMs * 4, async () => {
      const r = await send({ port: svc.port, path: '/v1/ping', headers: { authorization: `Bearer ${keys[0]!.secret}` } });
      if (r.status === 200) recovered = performance.now();
      return r.status === 200;
    });
    const result = await load.done;
    // Leases granted before the outage expire (render budget + grace) before the ledger is read.
    await sleep(12_000);
    const ledger = await meteredByKey({ databaseUrl: pg.url });
    const doubled = keys.reduce((n, k) => n + Math.max(0, (ledger.get(k.id) ?? 0) - (result.meteredReceived.get(k.id) ?? 0)), 0);
    return { pg_outage_5xx_other: result.unexpected5xx, pg_outage_double_counted: doubled, pg_outage_in_flight: inFlight, recovery_ms: Math.round(recovered - restarted) };
  } finally {
    await svc.signal('SIGTERM');
    await pg.destroy();
    cleanup();
  }
}

/** Renders that were not served, by status and error code (`"429 concurrent_limit"`, …). */
export type Failures = Record<string, number>;

/** Renders one after another while `during` runs; counts those that were not served. */
async function rendersWhile(svc: Service, secret: string, during: Promise<void>): Promise<{ renders: number; failed: number; failures: Failures }> {
  let over = false;
  void during.then(() => (over = true));
  let renders = 0;
  let failed = 0;
  const failures: Failures = {};
  while (!over) {
    const answer = await uniqueRender(svc, secret, renders);
    renders += 1;
    if (answer === '200') continue;
    failed += 1;
    failures[answer] = (failures[answer] ?? 0) + 1;
  }
  return { renders, failed, failures };
}

export async function redisOutage(o: { phaseMs: number }): Promise<number> {
  const redis = await startRedis();
  const svc = await startLoadService({ env: { REDIS_URL: redis.url, ...FULL_BUDGET } });
  try {
    const [key] = await loadKeys(svc, 1);
    const outage = (async () => {
      await sleep(o.phaseMs);
      await redis.stop();
      await sleep(o.phaseMs);
      await redis.start();
      await sleep(o.phaseMs);
    })();
    return (await rendersWhile(svc, key!.secret, outage)).failed;
  } finally {
    await svc.signal('SIGTERM');
    await redis.destroy();
    cleanup();
  }
}

/** What the full-disk scenario saw. */
export interface DiskFull {
  renders: number;
  failed: number;
  failures: Failures;
  /** Lines the service logged for cache stores it could not write (one when the failure began). */
  storeFailedLines: number;
}

export async function diskFull(o: { phaseMs: number }): Promise<DiskFull> {
  // Policy on a PostgreSQL of its own, so the full disk is the file cache's alone.
  const pg = await startPostgres();
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'tintype-full-'));
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=8m', 'tmpfs', dataDir]);
  let svc: Service | undefined;
  try {
    svc = await startLoadService({ dataDir, env: { DATABASE_URL: pg.url, ...FULL_BUDGET } });
    const [key] = await loadKeys(svc, 1);
    try {
      writeFileSync(path.join(dataDir, 'filler'), Buffer.alloc(16 * 1024 * 1024));
    } catch {
      // ENOSPC: the disk is full, as meant
    }
    const r = await rendersWhile(svc, key!.secret, sleep(o.phaseMs));
    const storeFailedLines = svc.stderr().split('\n').filter((l) => l.includes('"event":"cache.store_failed"')).length;
    return { ...r, storeFailedLines };
  } finally {
    await svc?.signal('SIGTERM');
    execFileSync('umount', ['-l', dataDir]);
    rmSync(dataDir, { recursive: true, force: true });
    await pg.destroy();
  }
}

export async function dependenciesLost(o: { clients: number; phaseMs: number; seed: number }): Promise<DependencyFigures> {
  const pgFigures = await postgresOutage(o);
  const redisFailed = await redisOutage(o);
  const disk = await diskFull(o);
  return { ...pgFigures, redis_outage_failed: redisFailed, disk_full_failed: disk.failed };
}
