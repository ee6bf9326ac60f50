/**
 * Redis Cluster and Redis Sentinel for the counters store's tests (docs/operations.md "Stores"):
 * real redis-server processes on spare loopback ports in a temporary directory, killed (and the
 * directory removed) when the test's process exits at the latest.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { accepting, freePort } from '../e2e/reliability/instances.ts';

const run = promisify(execFile);
const cli = async (port: number, ...args: string[]): Promise<string> => (await run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args])).stdout.trim();

const children = new Set<ChildProcess>();
const dirs = new Set<string>();
process.once('exit', () => {
  for (const c of children) c.kill('SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function tempDir(prefix: string): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  dirs.add(dir);
  return dir;
}

async function redisServer(args: string[]): Promise<{ port: number; child: ChildProcess }> {
  const port = await freePort();
  const child = spawn('redis-server', [...args, '--port', String(port), '--bind', '127.0.0.1'], { stdio: 'ignore' });
  // Killed at exit, never what keeps a test's process alive.
  child.unref();
  children.add(child);
  child.once('exit', () => children.delete(child));
  await accepting(port, 10_000);
  return { port, child };
}

async function until(what: string, ok: () => Promise<boolean>, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await ok().catch(() => false))) {
    if (Date.now() > end) throw new Error(`gave up waiting: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const kill = async (c: ChildProcess): Promise<void> => {
  if (c.exitCode !== null || c.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => c.once('exit', () => resolve()));
  // Waited for now: unreferenced, its exit would not keep the process alive to be seen.
  c.ref();
  c.kill('SIGKILL');
  await exited;
};

/** A cluster lives as long as the test's process: test/policy/stores.ts lends it to one home after another. */
export interface RedisCluster {
  /** `redis+cluster://` naming every master. */
  url: string;
  /** SIGSTOP / SIGCONT on every node: every decision waits, as on a lock. */
  pause(): void;
  resume(): void;
  /** FLUSHALL on every master: the next test starts from nothing. */
  flush(): Promise<void>;
}

/** `masters` cluster nodes, no replicas, every slot assigned and the cluster state ok on each. */
export async function startRedisCluster(masters = 3): Promise<RedisCluster> {
  const dir = tempDir('tintype-cluster-');
  const nodes: Array<{ port: number; child: ChildProcess }> = [];
  for (let i = 0; i < masters; i++) {
    // The bus port on a free port of its own: port + 10000 may be past 65535.
    const bus = await freePort();
    nodes.push(await redisServer([
      '--cluster-enabled', 'yes', '--cluster-config-file', path.join(dir, `nodes-${i}.conf`), '--cluster-port', String(bus),
      '--dir', dir, '--save', '', '--appendonly', 'no',
    ]));
  }
  const ports = nodes.map((n) => n.port);
  await run('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-yes']);
  for (const p of ports) await until(`cluster state ok on ${p}`, async () => /cluster_state:ok/.test(await cli(p, 'CLUSTER', 'INFO')));
  return {
    url: `redis+cluster://${ports.map((p) => `127.0.0.1:${p}`).join(',')}`,
    pause: () => nodes.forEach((n) => n.child.kill('SIGSTOP')),
    resume: () => nodes.forEach((n) => n.child.kill('SIGCONT')),
    async flush() {
      for (const p of ports) await cli(p, 'FLUSHALL');
    },
  };
}

export interface RedisSentinel {
  /** `redis+sentinel://…/counters`. */
  url: string;
  masterName: string;
  /** The port of the master the sentinel names now. */
  masterPort(): Promise<number>;
  /**
   * SENTINEL FAILOVER, resolved once the sentinel names the replica master, it answers as one, and
   * the old master is its replica in sync (until then a client still on the old master writes
   * what the demotion throws away: asynchronous replication).
   */
  failover(): Promise<number>;
  destroy(): Promise<void>;
}

/** One master, one replica in sync with it, one sentinel (quorum 1) watching them. */
export async function startRedisSentinel(): Promise<RedisSentinel> {
  const dir = tempDir('tintype-sentinel-');
  const masterName = 'counters';
  const plain = ['--save', '', '--appendonly', 'no', '--dir', dir];
  const master = await redisServer(plain);
  const replica = await redisServer([...plain, '--replicaof', '127.0.0.1', String(master.port)]);
  await until('the replica in sync', async () => /master_link_status:up/.test(await cli(replica.port, 'INFO', 'replication')));
  const conf = path.join(dir, 'sentinel.conf');
  writeFileSync(conf, [
    `sentinel monitor ${masterName} 127.0.0.1 ${master.port} 1`,
    `sentinel down-after-milliseconds ${masterName} 5000`,
    `sentinel failover-timeout ${masterName} 20000`,
    '',
  ].join('\n'));
  const sentinel = await redisServer([conf, '--sentinel', '--dir', dir]);
  await until('the sentinel sees the replica', async () => /127\.0\.0\.1/.test(await cli(sentinel.port, 'SENTINEL', 'REPLICAS', masterName)));
  const masterPort = async (): Promise<number> => Number((await cli(sentinel.port, 'SENTINEL', 'GET-MASTER-ADDR-BY-NAME', masterName)).split('\n')[1]);
  return {
    url: `redis+sentinel://127.0.0.1:${sentinel.port}/${masterName}`,
    masterName,
    masterPort,
    async failover() {
      const before = await masterPort();
      await until('SENTINEL FAILOVER accepted', async () => (await cli(sentinel.port, 'SENTINEL', 'FAILOVER', masterName)) === 'OK');
      await until('the replica promoted', async () => {
        const now = await masterPort();
        return now !== before && /^role:master/m.test(await cli(now, 'INFO', 'replication'));
      });
      await until('the old master its replica, in sync', async () => /^role:slave[\s\S]*master_link_status:up/m.test(await cli(before, 'INFO', 'replication')));
      return masterPort();
    },
    async destroy() {
      await Promise.all([master, replica, sentinel].map((n) => kill(n.child)));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
