/**
 * A lane relay reaching a guard whose accept queue is full (renderer/browser/relay.ts
 * connectGuard): on a unix socket the connection is refused at once with EAGAIN, and a request
 * given up there would never be judged nor counted. The relay tries again until the guard takes
 * it, and gives up when the lane is cut.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { connectGuard } from '../../../renderer/browser/relay.ts';

/**
 * A guard stand-in in a process of its own that listens with a queue of one and does not accept
 * until it is told to on stdin (its event loop blocked on the read), then accepts everything.
 */
async function stalledListener(t: { teardown(fn: () => unknown): void }): Promise<{ path: string; accept(): void }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'tintype-relay-queue-'));
  const socketPath = path.join(dir, 'guard.sock');
  const child = spawn(process.execPath, ['-e', `
    const net = require('node:net'); const fs = require('node:fs');
    const server = net.createServer((s) => s.on('error', () => {}));
    server.listen({ path: ${JSON.stringify(socketPath)}, backlog: 1 }, () => {
      process.stdout.write('listening\\n');
      fs.readSync(0, Buffer.alloc(1));
    });
  `], { stdio: ['pipe', 'pipe', 'inherit'] });
  t.teardown(async () => {
    child.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
  });
  await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
  return { path: socketPath, accept: () => child.stdin.write('go\n') };
}

const keep = (s: net.Socket): net.Socket => s;

/** A dial to `path` that counts the connections the full queue refused at once (EAGAIN). */
function countingDial(path: string): { dial: () => net.Socket; refusedAtOnce: () => number } {
  let refused = 0;
  const dial = (): net.Socket => {
    const s = net.connect({ path });
    s.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EAGAIN') refused += 1;
    });
    return s;
  };
  return { dial, refusedAtOnce: () => refused };
}


t.test('a full accept queue is waited out: every connection reaches the guard once it accepts again', async (t) => {
  const guard = await stalledListener(t);
  const { dial, refusedAtOnce } = countingDial(guard.path);
  const connecting = Array.from({ length: 8 }, () => connectGuard(dial, () => true, keep));
  while (refusedAtOnce() === 0) await new Promise((r) => setTimeout(r, 10));
  guard.accept();
  const sockets = await Promise.all(connecting);
  t.ok(refusedAtOnce() > 0, `the full queue refused connections at once (${refusedAtOnce()} times)`);
  t.equal(sockets.length, 8, 'every one connected in the end');
  for (const s of sockets) s.destroy();
});

t.test('a lane cut while it waits gives the connection up', async (t) => {
  const guard = await stalledListener(t);
  let cut = false;
  const { dial, refusedAtOnce } = countingDial(guard.path);
  const connecting = Array.from({ length: 8 }, () => connectGuard(dial, () => !cut, keep).then((s) => s.destroy(), () => 'given up'));
  while (refusedAtOnce() === 0) await new Promise((r) => setTimeout(r, 10));
  cut = true;
  const outcomes = await Promise.all(connecting);
  t.ok(outcomes.includes('given up'), 'the waiting ones were given up');
});

t.test('a connection cut before it connected gives the request up rather than leaving it waiting', async (t) => {
  const guard = await stalledListener(t);
  guard.accept();
  const opened: net.Socket[] = [];
  const connecting = connectGuard(() => net.connect({ path: guard.path }), () => true, (s) => {
    opened.push(s);
    return s;
  });
  // The lane is cut at once, as setAuthorization destroys every socket of the lane.
  for (const s of opened) s.destroy();
  await t.rejects(connecting, /closed before it connected/);
});
