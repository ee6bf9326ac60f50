/**
 * What a Redis with its append-only file (`appendonly yes`, `appendfsync everysec`) loses when its
 * process is killed (docs/operations.md "Stores", failure semantics): calls settled under load,
 * Redis killed with SIGKILL mid-load and started again on the same directory, then every settle
 * that was answered `settled` is looked for: its lease closed, its metered call counted, its ledger
 * event in the stream. Redis write()s the file before it answers, so a process kill loses none; a
 * host crash (the last second not yet fsync'ed) cannot be made here.
 */
import t from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { createPolicy } from '../../policy/authorize.ts';
import { createKey } from '../../policy/keys.ts';
import { BUILT_IN_PLANS, type Plans } from '../../policy/plans.ts';
import { keyPrefix, openRedisStore } from '../../policy/store/redis/store.ts';
import { LEDGER_STREAM } from '../../policy/ledger/event.ts';
import { accepting, freePort } from '../e2e/reliability/instances.ts';
import { fakeClock, storeHome } from './stores.ts';

const PLANS: Plans = { ...BUILT_IN_PLANS, wide: { monthlyQuota: 1_000_000, perMinute: 1_000_000, concurrentRenders: 1_000 } };
/** Settles answered before the kill; workers calling at once. */
const SETTLED_BEFORE_KILL = 2_000;
const WORKERS = 16;

t.test('Redis killed (SIGKILL) under load with appendfsync everysec: no settled call lost', async (t) => {
  const home = await storeHome('postgres');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tintype-aof-'));
  const port = await freePort();
  let child: ChildProcess | undefined;
  const start = async (): Promise<void> => {
    child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'yes', '--appendfsync', 'everysec'], { stdio: 'ignore' });
    await accepting(port, 10_000);
  };
  await start();
  const url = `redis://127.0.0.1:${port}`;
  // No ledger sink: the events stay in the stream, where the test counts them.
  const store = openRedisStore({ countersUrl: url, databaseUrl: home.env.DATABASE_URL!, poolSize: 4, shortLived: true });
  t.teardown(async () => {
    await store.close();
    child?.kill('SIGKILL');
    await home.drop();
    rmSync(dir, { recursive: true, force: true });
  });
  await store.migrate();
  const clock = fakeClock('2026-06-10T10:00:00Z');
  const policy = createPolicy({ store, plans: PLANS, clock: clock.now, leaseTtlMs: 600_000 });
  const k = await createKey(store, PLANS, { plan: 'wide', now: clock.now() });

  const settled: string[] = [];
  let stop = false;
  let killedAt = -1;
  const worker = async (): Promise<void> => {
    while (!stop) {
      try {
        const d = await policy.check(`Bearer ${k.secret}`, 'ping');
        if (!d.allow) continue;
        if ((await policy.settle({ lease: d.leaseId, status: 200, cache: 'miss' })) === 'settled') settled.push(d.leaseId);
      } catch {
        // Redis gone: a call that failed was not answered `settled`, so is not counted.
      }
      if (killedAt < 0 && settled.length >= SETTLED_BEFORE_KILL) {
        killedAt = settled.length;
        child!.kill('SIGKILL');
      }
      if (killedAt >= 0) stop = true;
    }
  };
  await Promise.all(Array.from({ length: WORKERS }, worker));
  const exited = child!.exitCode !== null || child!.signalCode !== null ? Promise.resolve() : new Promise((r) => child!.once('exit', r));
  await exited;
  await start();

  const redis = new Redis(url);
  t.teardown(() => redis.disconnect());
  const closed = new Set(await redis.hkeys(`${keyPrefix(k.id)}c`));
  const events = new Set((await redis.xrange(LEDGER_STREAM, '-', '+')).map(([, f]) => (JSON.parse(f[1]!) as { leaseId: string }).leaseId));
  const open = await redis.hlen(`${keyPrefix(k.id)}l`);
  const counted = Number(await redis.get(`${keyPrefix(k.id)}m:2026-06`));
  const lostClose = settled.filter((l) => !closed.has(l)).length;
  const lostEvent = settled.filter((l) => !events.has(l)).length;
  t.comment(`settled ${settled.length} (${killedAt} before the kill), closed kept ${closed.size}, events ${events.size}, open ${open}, month counter ${counted}`);
  t.ok(settled.length >= SETTLED_BEFORE_KILL, 'the kill came under load');
  t.equal(lostClose, 0, 'every settled lease is closed after the restart');
  t.equal(lostEvent, 0, 'every settled lease has its ledger event');
  t.ok(counted - open >= settled.length, 'the month counts every settled call (beside the reservations still open)');
  t.equal((await policy.check(`Bearer ${k.secret}`, 'ping')).allow, true, 'the store decides again on the restarted Redis');
});
