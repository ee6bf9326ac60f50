/**
 * The roles as the images run them: compiled by `npm run build`'s configuration (tsconfig.build.json)
 * and run where neither tsx nor typescript can be found (the image installs production packages
 * only): the command answers, and a module started in a new thread (an OG drawing thread) loads.
 * scripts/build-images.sh runs every role from the images themselves.
 */
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { ROOT } from '../helm.ts';

const run = promisify(execFile);
/** Development packages the images leave out, which must not be needed at run time. */
const LEFT_OUT = new Set(['tsx', 'typescript', '.bin']);

t.setTimeout(240_000);

t.test('compiled, the roles run with neither tsx nor typescript to be found', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tintype-compiled-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  await run(process.execPath, [path.join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', path.join(ROOT, 'tsconfig.build.json'), '--outDir', dir], { cwd: ROOT });
  copyFileSync(path.join(ROOT, 'package.json'), path.join(dir, 'package.json'));
  // The checkout's packages, less the development ones an image does not have.
  mkdirSync(path.join(dir, 'node_modules'));
  const modules = path.join(ROOT, 'node_modules');
  for (const name of readdirSync(modules)) {
    if (!LEFT_OUT.has(name)) symlinkSync(path.join(modules, name), path.join(dir, 'node_modules', name));
  }
  const help = await run(process.execPath, [path.join(dir, 'bin/tintype.js'), '--help'], { cwd: dir });
  t.match(help.stdout + help.stderr, /usage: tintype <command>/, 'tintype --help answers');
  const notFound = await run(process.execPath, ['--input-type=module', '-e', "await import('tsx')"], { cwd: dir }).then(() => 'found', (e: Error) => e.message);
  t.match(notFound, /Cannot find package 'tsx'/, 'tsx cannot be found from there');

  const draw = `
    import { createOgPool } from ${JSON.stringify(path.join(dir, 'renderer/og/pool.js'))};
    const pool = createOgPool({ threads: 1 });
    await pool.start();
    await pool.stop();
    console.log('drawing thread ready');`;
  const drawn = await run(process.execPath, ['--input-type=module', '-e', draw], { cwd: dir });
  t.match(drawn.stdout, /drawing thread ready/, 'an OG drawing thread loads the compiled worker and draws its warm-up cards');
});
