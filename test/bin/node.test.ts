/**
 * One Node for the checkout (README "Node"): package.json's engines ask for 22 or later,
 * .node-version names the Node 24 LTS that scripts/setup.sh provides and the images carry, this
 * suite runs on a Node the engines accept, and bin/tintype runs on the Node setup linked into
 * node_modules/.bin whatever `node` comes first on the caller's PATH.
 */
import t from 'tap';
import { execFile } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { ROOT } from '../helm.ts';

const run = promisify(execFile);
const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } };
const pinned = readFileSync(path.join(ROOT, '.node-version'), 'utf8').trim();

t.test('engines: Node 22 or later; .node-version: a Node 24 release; this suite runs on one the engines accept', async (t) => {
  t.equal(pkg.engines.node, '>=22');
  t.match(pinned, /^24\.\d+\.\d+$/);
  t.ok(Number(process.versions.node.split('.')[0]) >= 22, `the tests run on Node ${process.versions.node}`);
});

t.test('bin/tintype runs on the checkout\'s Node, not the first `node` on the PATH', async (t) => {
  const linked = path.join(ROOT, 'node_modules/.bin/node');
  // A PATH whose first `node` is not one tintype runs on: it says so and fails.
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tintype-node-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(path.join(dir, 'node'), '#!/bin/sh\necho "the PATH\'s node ran" >&2\nexit 97\n');
  chmodSync(path.join(dir, 'node'), 0o755);
  const env = { PATH: `${dir}:/usr/bin:/bin`, HOME: dir };
  if (existsSync(linked)) {
    const { stdout, stderr } = await run(path.join(ROOT, 'bin/tintype'), ['--help'], { env });
    t.match(stdout + stderr, /^usage: tintype <command>/, 'answered, on node_modules/.bin/node');
    const { stdout: version } = await run(linked, ['--version']);
    t.equal(version.trim(), `v${pinned}`, 'which is the Node .node-version names');
  } else {
    // No link: setup found the machine's Node new enough, and bin/tintype runs on the PATH's.
    const failed = await run(path.join(ROOT, 'bin/tintype'), ['--help'], { env }).then(() => null, (e: { code: number }) => e.code);
    t.equal(failed, 97, 'the PATH\'s node');
  }
});
