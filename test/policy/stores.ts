/**
 * Real stores for the policy tests: SQLite in a temporary directory, PostgreSQL in a database
 * of its own on 127.0.0.1:5432 (created here, dropped at teardown), and Redis counters beside
 * such a database in a redis-server of the home's own (a process the test can stop), so one
 * suite runs on the three.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import Database from '../../policy/store/sqlite-driver.ts';
import pg from 'pg';
import { asPgAdmin } from '../lib/pg-admin.ts';
import { openSqliteStore } from '../../policy/store/sqlite.ts';
import { openPostgresStore } from '../../policy/store/postgres.ts';
import { openRedisStore } from '../../policy/store/redis/store.ts';
import { startRedis } from '../e2e/reliability/instances.ts';
import { startRedisCluster, type RedisCluster } from './redis-topology.ts';
import type { PolicyStore } from '../../policy/store/store.ts';
import { TEST_LEASE_ENV } from '../lib/leases.ts';


/**
 * `redis-cluster`: the counters in a 3-master Redis Cluster of the home's own for as long as it
 * lives, emptied at its drop and then lent to the process's next home (a cluster takes seconds
 * to form; one home's ledger sinks must never read another's stream).
 */
export type StoreKind = 'sqlite' | 'postgres' | 'redis' | 'redis-cluster';

const idleClusters: RedisCluster[] = [];

/** The counters' Redis of a home: a server of its own, or a cluster lent to it. */
async function countersOf(kind: StoreKind) {
  if (kind === 'redis') return startRedis();
  if (kind !== 'redis-cluster') return undefined;
  const c = idleClusters.pop() ?? await startRedisCluster();
  return {
    url: c.url, pause: () => c.pause(), resume: () => c.resume(),
    async destroy() {
      await c.flush();
      idleClusters.push(c);
    },
  };
}

/** A place a store lives: open as many stores on it as a test needs (replicas), then drop it. */
export interface StoreHome {
  kind: StoreKind;
  /** Holds every policy table locked from another connection until the returned function is called. */
  lockAll(): Promise<() => Promise<void>>;
  /** Env that points a policy process at this home. */
  env: Record<string, string>;
  /**
   * `timeoutMs`: how long a store call may wait on a lock before failing (default: the store's).
   * `acquireTimeoutMs` (PostgreSQL): how long a call may wait for a connection (default: the
   * store's 500 ms, which a loaded machine can spend on a connect alone).
   */
  open(timeoutMs?: number, acquireTimeoutMs?: number): PolicyStore;
  drop(): Promise<void>;
}

export async function storeHome(kind: StoreKind): Promise<StoreHome> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tintype-policy-'));
  if (kind === 'sqlite') {
    return {
      kind,
      env: { TINTYPE_DATA_DIR: dir, ...TEST_LEASE_ENV },
      async lockAll() {
        const db = new Database(path.join(dir, 'policy.sqlite'));
        db.exec('BEGIN EXCLUSIVE');
        return async () => {
          db.exec('ROLLBACK');
          db.close();
        };
      },
      open: (timeoutMs) => openSqliteStore({ dataDir: dir, busyTimeoutMs: timeoutMs }),
      async drop() {
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  const name = `tintype_policy_${process.pid}_${randomBytes(4).toString('hex')}`;
  await asPgAdmin(`CREATE DATABASE ${name}`);
  const url = `postgres://postgres@127.0.0.1:5432/${name}`;
  const redis = await countersOf(kind);
  const dropDatabase = async (): Promise<void> => {
    await asPgAdmin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    rmSync(dir, { recursive: true, force: true });
  };
  if (redis !== undefined) {
    return {
      kind,
      env: { TINTYPE_DATA_DIR: dir, DATABASE_URL: url, TINTYPE_COUNTERS_URL: redis.url, ...TEST_LEASE_ENV },
      // The counters' server stopped (SIGSTOP): every decision waits, as on a lock, until released.
      async lockAll() {
        redis.pause();
        return async () => redis.resume();
      },
      open: (timeoutMs, acquireTimeoutMs) => openRedisStore({
        countersUrl: redis.url, databaseUrl: url, poolSize: 10, commandTimeoutMs: timeoutMs, statementTimeoutMs: timeoutMs, acquireTimeoutMs,
      }),
      async drop() {
        await redis.destroy();
        await dropDatabase();
      },
    };
  }
  return {
    kind,
    env: { TINTYPE_DATA_DIR: dir, DATABASE_URL: url, ...TEST_LEASE_ENV },
    async lockAll() {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      await c.query('BEGIN');
      await c.query('LOCK TABLE api_keys, key_state, usage_months, leases, usage IN ACCESS EXCLUSIVE MODE');
      return async () => {
        await c.query('ROLLBACK');
        await c.end();
      };
    },
    open: (timeoutMs, acquireTimeoutMs) => openPostgresStore({ url, poolSize: 10, statementTimeoutMs: timeoutMs, acquireTimeoutMs }),
    drop: dropDatabase,
  };
}

/** A clock the test moves by hand. */
export function fakeClock(start: number | string) {
  let now = typeof start === 'string' ? Date.parse(start) : start;
  return {
    now: () => now,
    set(to: number | string) {
      now = typeof to === 'string' ? Date.parse(to) : to;
    },
    advance(ms: number) {
      now += ms;
    },
  };
}
