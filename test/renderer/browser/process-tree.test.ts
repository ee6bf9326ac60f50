/**
 * renderer/browser/process-tree.ts: the asynchronous walk the pool's memory check uses finds
 * the same tree as the synchronous one, and the memory figure covers every process in it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import t from 'tap';
import { processTree, processTreeAsync, treeMemoryBytes } from '../../../renderer/browser/process-tree.ts';
import type { Teardowns } from './helpers.ts';

async function sleeper(t: Teardowns): Promise<ChildProcess> {
  // A shell that keeps a child of its own: a tree two levels deep below the test process.
  const child = spawn('sh', ['-c', 'sleep 600 & wait'], { stdio: 'ignore' });
  await once(child, 'spawn');
  t.teardown(() => {
    for (const s of processTree(child.pid!)) {
      try {
        process.kill(s.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  });
  return child;
}

async function grandchildren(pid: number): Promise<number> {
  // `sleep` may not have been forked yet when the shell has just started.
  for (;;) {
    const tree = processTree(pid);
    if (tree.length >= 2) return tree.length;
    await new Promise((r) => setTimeout(r, 20));
  }
}

t.test('the asynchronous walk finds the same tree as the synchronous one', async (t) => {
  const child = await sleeper(t);
  await grandchildren(child.pid!);
  const sync = processTree(child.pid!).map((s) => s.pid).sort();
  const async = (await processTreeAsync(child.pid!)).map((s) => s.pid).sort();
  t.same(async, sync);
  t.equal(async.length, 2, 'the shell and its sleep');
  t.same(await processTreeAsync(2 ** 22 + 1), [], 'no such process: an empty tree');
});

t.test('memory: the sum over the tree, more than any one process of it', async (t) => {
  const child = await sleeper(t);
  await grandchildren(child.pid!);
  const tree = processTree(child.pid!);
  const whole = await treeMemoryBytes(child.pid!);
  const leaf = await treeMemoryBytes(tree[1]!.pid);
  t.ok(leaf > 0, 'a process holds some memory');
  t.ok(whole > leaf, 'the tree holds more than its leaf');
  t.equal(await treeMemoryBytes(2 ** 22 + 1), 0, 'no such process: nothing');
});
