/**
 * What the reliability scenarios read from outside the running service: its memory, its
 * Chromium processes, zombies, busy slots (the admin port's metrics) and open leases (its store).
 */
import { readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import Database from '../../../policy/store/sqlite-driver.ts';
import pg from 'pg';
import { processTree } from '../../../renderer/browser/process-tree.ts';
import { METRICS_PATH } from '../../../lib/admin.ts';

/** The resident memory of one process, in MB (0 once it is gone). */
export function rssMb(pid: number): number {
  try {
    const m = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m === null ? 0 : Math.round(Number(m[1]) / 102.4) / 10;
  } catch {
    return 0;
  }
}

function commandOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0] ?? '';
  } catch {
    return '';
  }
}

const isChromium = (pid: number): boolean => /chrom/.test(path.basename(commandOf(pid)));

/** The Chromium processes below `root` whose parent is not a Chromium process: each a browser. */
export function browserRoots(root: number): number[] {
  const tree = processTree(root);
  const chromium = new Set(tree.filter((s) => s.state !== 'Z' && isChromium(s.pid)).map((s) => s.pid));
  return tree.filter((s) => chromium.has(s.pid) && !chromium.has(s.ppid)).map((s) => s.pid);
}

/**
 * Zombies below `root` that nothing alive will reap: a running Chromium reaps its own exited
 * children in its own time (its zygote lazily), so only a zombie whose parent is not a live
 * Chromium is left behind: one of the service's own children, or one the kill orphaned.
 */
export function zombiesBelow(root: number): number {
  const tree = processTree(root);
  const chromium = new Set(tree.filter((s) => s.state !== 'Z' && isChromium(s.pid)).map((s) => s.pid));
  return tree.filter((s) => s.pid !== root && s.state === 'Z' && !chromium.has(s.ppid)).length;
}

/** The value of one unlabelled series on an admin port's `/metrics`. */
export function metric(adminPort: number, name: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port: adminPort, path: METRICS_PATH, agent: false }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => {
          const m = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text);
          resolve(m === null ? Number.NaN : Number(m[1]));
        });
      })
      .on('error', reject);
  });
}

/** Where policy keeps its state: the data directory's SQLite, or a PostgreSQL URL. */
export type StoreAt = { dataDir: string } | { databaseUrl: string };

async function query<T>(store: StoreAt, sql: string): Promise<T[]> {
  if ('dataDir' in store) {
    const db = new Database(path.join(store.dataDir, 'policy.sqlite'), { readonly: true, fileMustExist: true });
    try {
      return db.prepare(sql).all() as T[];
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: store.databaseUrl });
  await client.connect();
  try {
    return (await client.query(sql)).rows as T[];
  } finally {
    await client.end();
  }
}

/** Leases granted and neither settled nor expired yet. */
export async function openLeases(store: StoreAt): Promise<number> {
  const [row] = await query<{ n: number | string }>(store, 'SELECT count(*) AS n FROM leases');
  return Number(row?.n ?? 0);
}

/** Metered usage records per key id. */
export async function meteredByKey(store: StoreAt): Promise<Map<string, number>> {
  // SQLite stores the flag as 0/1, PostgreSQL as a boolean.
  const metered = 'dataDir' in store ? 'metered = 1' : 'metered';
  const rows = await query<{ key_id: string; n: number | string }>(store, `SELECT key_id, count(*) AS n FROM usage WHERE ${metered} GROUP BY key_id`);
  return new Map(rows.map((r) => [r.key_id, Number(r.n)]));
}

/** Leases that expired unsettled: an answer whose outcome policy never heard. */
export async function unsettledLeases(store: StoreAt): Promise<number> {
  const [row] = await query<{ n: number | string }>(store, "SELECT count(*) AS n FROM usage WHERE outcome = 'unsettled'");
  return Number(row?.n ?? 0);
}
