/**
 * What the ledger tests share: a migrated PostgreSQL database of the test's own (stores.ts), a
 * Redis stream of the test's own (a random name, deleted at teardown), records to append, and
 * a relay that stands for PostgreSQL going away and coming back.
 */
import net from 'node:net';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import pg from 'pg';
import type { Test } from 'tap';
import { storeHome } from '../stores.ts';
import { LEDGER_FIELD, ledgerEvent } from '../../../policy/ledger/index.ts';
import type { UsageRecord } from '../../../policy/store/store.ts';

export const REDIS_URL = 'redis://127.0.0.1:6379';

export interface LedgerHome {
  databaseUrl: string;
  stream: string;
  redis: Redis;
  db: pg.Client;
  append(records: readonly UsageRecord[]): Promise<void>;
  /** Rows of the ledger, and rows per lease seen more than once. */
  counts(): Promise<{ rows: number; duplicates: number }>;
}

export async function ledgerHome(t: Test): Promise<LedgerHome> {
  const home = await storeHome('postgres');
  const store = home.open();
  await store.migrate();
  await store.close();
  const databaseUrl = home.env['DATABASE_URL']!;
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  const redis = new Redis(REDIS_URL);
  const stream = `test:tintype:ledger:${randomBytes(6).toString('hex')}`;
  t.teardown(async () => {
    await redis.del(stream);
    redis.disconnect();
    await db.end();
    await home.drop();
  });
  return {
    databaseUrl, stream, redis, db,
    async append(records) {
      for (let i = 0; i < records.length; i += 1_000) {
        const p = redis.pipeline();
        for (const r of records.slice(i, i + 1_000)) p.xadd(stream, '*', LEDGER_FIELD, ledgerEvent(r));
        await p.exec();
      }
    },
    async counts() {
      const r = await db.query(`SELECT count(*) AS rows, count(*) - count(DISTINCT lease_id) AS duplicates FROM usage`);
      return { rows: Number(r.rows[0].rows), duplicates: Number(r.rows[0].duplicates) };
    },
  };
}

const OPS = ['screenshot', 'pdf', 'og'] as const;
const KINDS: Array<Pick<UsageRecord, 'status' | 'error' | 'cache' | 'metered' | 'outcome'>> = [
  { status: 200, error: null, cache: 'miss', metered: true, outcome: 'settled' },
  { status: 200, error: null, cache: 'hit', metered: true, outcome: 'settled' },
  { status: 504, error: 'render_timeout', cache: null, metered: true, outcome: 'settled' },
  { status: 422, error: 'url_not_allowed', cache: null, metered: false, outcome: 'settled' },
  { status: null, error: null, cache: null, metered: false, outcome: 'unsettled' },
];

/** `n` records of `keys` keys in `month`, of every kind and operation, lease ids from `from`. */
export function records(n: number, month: string, keys = 5, from = 0): UsageRecord[] {
  const at = Date.parse(`${month}-10T00:00:00Z`);
  return Array.from({ length: n }, (_, j) => {
    const i = from + j;
    return {
      leaseId: `lease_${month}_${i}`, keyId: `key_${String(i % keys).padStart(12, '0')}`, operation: OPS[i % 3]!, month,
      ...KINDS[i % KINDS.length]!, checkedAt: at + i, recordedAt: at + i + 5,
    };
  });
}

/** A port nothing listens on yet; `open()` relays it to PostgreSQL, `close()` cuts every connection. */
export async function postgresRelay(): Promise<{ url(databaseUrl: string): string; open(): Promise<void>; close(): Promise<void> }> {
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const port = (probe.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  let server: net.Server | undefined;
  const sockets = new Set<net.Socket>();
  return {
    url(databaseUrl) {
      const u = new URL(databaseUrl);
      u.port = String(port);
      return u.toString();
    },
    async open() {
      server = net.createServer((c) => {
        const up = net.connect(5432, '127.0.0.1');
        for (const s of [c, up]) {
          sockets.add(s);
          s.on('error', () => {});
          s.once('close', () => sockets.delete(s));
        }
        c.once('close', () => up.destroy());
        up.once('close', () => c.destroy());
        c.pipe(up).pipe(c);
      });
      await new Promise<void>((resolve) => server!.listen(port, '127.0.0.1', resolve));
    },
    async close() {
      for (const s of sockets) s.destroy();
      if (server !== undefined) await new Promise<void>((resolve) => server!.close(() => resolve()));
      server = undefined;
    },
  };
}
