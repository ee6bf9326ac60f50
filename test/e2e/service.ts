/**
 * The real service for end-to-end tests: `bin/tintype start` as a child process with its own
 * temporary TINTYPE_DATA_DIR, PORT=0 and TINTYPE_ADMIN_PORT=0 (the ports are read from what it
 * prints), keys made with `bin/tintype keys create`, and the usage ledger read from its SQLite.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Database, { type SqliteDatabase } from '../../policy/store/sqlite-driver.ts';
import { send, type Answer, type SendOptions } from '../envoy/client.ts';
import { checkAnswer } from './openapi-check.ts';

const TINTYPE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../bin/tintype');
const SOCKET_RECORDER = path.resolve(path.dirname(fileURLToPath(import.meta.url)), 'socket-recorder.ts');
const CHROMIUM = '/usr/bin/chromium-headless-shell';

/**
 * `bin/tintype` through env(1): tap puts its own loader into a child's NODE_OPTIONS, which cannot
 * load the extensionless launcher; env execs, so the pid is tintype's own and signals reach it.
 */
function spawnTintype(args: string[], env: Record<string, string>): ChildProcess {
  const own = env['NODE_OPTIONS'] === undefined ? [] : [`NODE_OPTIONS=${env['NODE_OPTIONS']}`];
  return spawn('/usr/bin/env', ['-u', 'NODE_OPTIONS', ...own, TINTYPE, ...args], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, CHROMIUM_PATH: CHROMIUM, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** Runs `bin/tintype <args>` to its end. */
export function runTintype(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawnTintype(args, env);
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    child.stderr!.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** One row of the usage ledger (policy's `usage` table). */
export interface LedgerRow {
  operation: string;
  status: number | null;
  error: string | null;
  cache: string | null;
  metered: number;
  outcome: string;
}

/** A running `tintype start`. */
export interface Service {
  /** The tintype process's own pid. */
  pid: number;
  port: number;
  adminPort: number;
  dataDir: string;
  env: Record<string, string>;
  /** Everything it wrote to stdout and stderr so far. */
  stdout(): string;
  stderr(): string;
  /** With `recordSockets`: the listeners and accepted connections of the tintype process so far. */
  sockets(): SocketRecord;
  /** Sends a request to the public port. */
  call(o: Omit<SendOptions, 'port'>): Promise<Answer>;
  /** Sends a signal; resolves with the exit code (null when killed by the signal). */
  signal(sig: NodeJS.Signals): Promise<number | null>;
  /** Makes a key on `plan` with `bin/tintype keys create`; returns its secret and id. */
  key(plan: string): Promise<{ secret: string; id: string }>;
  /** Waits for the exit code (null when killed by a signal). */
  exited(): Promise<number | null>;
  /** The ledger rows of one key, in order. */
  ledger(keyId: string): LedgerRow[];
  /** The calls counted against a key's quota this month. */
  used(keyId: string): number;
  /** Waits until the ledger of `keyId` holds `n` rows (the test's timeout bounds the wait). */
  ledgerOf(keyId: string, n: number): Promise<LedgerRow[]>;
  /**
   * Waits until `keyId` holds no open lease: every answer it got has been settled. The way to
   * wait for a 400 or a 503, which close their lease and write no usage (docs/architecture.md §6).
   */
  leasesClosed(keyId: string): Promise<void>;
  /** Leases of `keyId` not yet settled or expired. */
  openLeases(keyId: string): number;
}

export interface ServiceOptions {
  env?: Record<string, string>;
  /** Reuse a data dir (restart after a kill); otherwise a fresh temporary one. */
  dataDir?: string;
  /** Plans file contents (TINTYPE_PLANS). */
  plans?: Record<string, { monthlyQuota: number; perMinute: number; concurrentRenders: number }>;
  /** Record the process's listening ports and accepted connections (socket-recorder.ts; `Service.sockets`). */
  recordSockets?: boolean;
}

/** What socket-recorder.ts saw in the tintype process itself. */
export interface SocketRecord {
  /** Every TCP listener still open: its address and port. */
  listening: { address: string; port: number }[];
  /** Every accepted connection: the local address and port it arrived at. */
  accepted: { address: string; port: number }[];
}

/** The data dirs made here, removed by `cleanup`. */
const made: string[] = [];

/** Removes temporary data dirs. */
export function cleanup(): void {
  for (const d of made.splice(0)) rmSync(d, { recursive: true, force: true });
}

/** Starts `bin/tintype start` and resolves once it printed where it listens. */
export async function startService(o: ServiceOptions = {}): Promise<Service> {
  let dataDir = o.dataDir;
  if (dataDir === undefined) {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'tintype-e2e-'));
    made.push(dataDir);
  }
  const env: Record<string, string> = { TINTYPE_DATA_DIR: dataDir, PORT: '0', TINTYPE_ADMIN_PORT: '0', ...o.env };
  const socketLog = path.join(dataDir, 'sockets.log');
  if (o.recordSockets === true) {
    writeFileSync(socketLog, '');
    env['TINTYPE_TEST_SOCKET_LOG'] = socketLog;
    env['NODE_OPTIONS'] = `--import tsx --import ${SOCKET_RECORDER}`;
  }
  if (o.plans !== undefined) {
    const file = path.join(dataDir, 'plans.json');
    writeFileSync(file, JSON.stringify({ plans: o.plans }));
    env['TINTYPE_PLANS'] = file;
  }
  const child = spawnTintype(['start'], env);
  let out = '';
  let err = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const ports = await new Promise<{ port: number; adminPort: number }>((resolve, reject) => {
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString('utf8');
      // To a pipe, the start-up facts are one JSON line (bin/commands/start.ts announce).
      const listening = out.split('\n').slice(0, -1).filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { event: string; url: string; admin: string }).find((l) => l.event === 'start.listening');
      if (listening !== undefined) resolve({ port: Number(new URL(listening.url).port), adminPort: Number(new URL(listening.admin).port) });
    });
    child.stderr!.on('data', (c: Buffer) => (err += c.toString('utf8')));
    void exited.then((code) => reject(new Error(`tintype start exited (${code}) before listening:\n${err.slice(-2000)}`)));
  });
  let db: SqliteDatabase | undefined;
  const open = (): SqliteDatabase => (db ??= new Database(path.join(dataDir!, 'policy.sqlite'), { readonly: true, fileMustExist: true }));
  const openDb = open;
  const openLeases = (keyId: string): number =>
    (openDb().prepare('SELECT count(*) AS n FROM leases WHERE key_id = ?').get(keyId) as { n: number }).n;
  const ledger = (keyId: string): LedgerRow[] =>
    open().prepare('SELECT operation, status, error, cache, metered, outcome FROM usage WHERE key_id = ? ORDER BY seq').all(keyId) as LedgerRow[];

  return {
    ...ports,
    pid: child.pid!,
    dataDir,
    env,
    stdout: () => out,
    stderr: () => err,
    sockets() {
      const record: SocketRecord = { listening: [], accepted: [] };
      for (const line of (o.recordSockets === true ? readFileSync(socketLog, 'utf8') : '').split('\n')) {
        const [kind, pid, address, port] = line.split(' ');
        if (Number(pid) !== child.pid) continue;
        const entry = { address: address!, port: Number(port) };
        if (kind === 'accept') record.accepted.push(entry);
        else if (kind === 'listen') record.listening.push(entry);
        else record.listening = record.listening.filter((l) => l.address !== entry.address || l.port !== entry.port);
      }
      return record;
    },
    call: (req) => send({ ...req, port: ports.port }),
    async signal(sig) {
      db?.close();
      db = undefined;
      child.kill(sig);
      return exited;
    },
    exited: () => exited,
    async key(plan) {
      // The keys command reads the same store settings as the service.
      const storeEnv = Object.fromEntries(['TINTYPE_PLANS', 'DATABASE_URL'].filter((k) => env[k] !== undefined).map((k) => [k, env[k]!]));
      const r = await runTintype(['keys', 'create', '--plan', plan], { TINTYPE_DATA_DIR: dataDir!, ...storeEnv });
      const secret = /^secret: (\S+)$/m.exec(r.stdout)?.[1];
      const id = /^id: (\S+)$/m.exec(r.stdout)?.[1];
      if (r.code !== 0 || secret === undefined || id === undefined) throw new Error(`keys create failed: ${r.stderr}`);
      return { secret, id };
    },
    ledger,
    used(keyId) {
      const row = open().prepare('SELECT COALESCE(SUM(used), 0) AS n FROM usage_months WHERE key_id = ?').get(keyId) as { n: number };
      return row.n;
    },
    async ledgerOf(keyId, n) {
      for (;;) {
        const rows = ledger(keyId);
        if (rows.length >= n) return rows;
        await new Promise((r) => setTimeout(r, 25));
      }
    },
    async leasesClosed(keyId) {
      while (openLeases(keyId) > 0) await new Promise((r) => setTimeout(r, 25));
    },
    openLeases,
  };
}

/** The bearer header of a secret. */
export const bearer = (secret: string): Record<string, string> => ({ authorization: `Bearer ${secret}` });

/** JSON body headers with a key. */
export const jsonWith = (secret: string): Record<string, string> => ({ ...bearer(secret), 'content-type': 'application/json' });

/** The problems `answer` has against the OpenAPI document. */
export function againstDocument(method: string, pathWithQuery: string, answer: Answer): string[] {
  return checkAnswer({ method, path: pathWithQuery.split('?', 1)[0]!, status: answer.status, headers: answer.headers, body: answer.body });
}

/** The parsed JSON body of an answer. */
export const json = (a: Answer): any => JSON.parse(a.body.toString('utf8'));
