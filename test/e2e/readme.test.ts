/**
 * The README's quick start works as printed (README "Quick start"): its shell block is run by
 * bash against `tintype start`, with only what a test must change: the port (tests listen on
 * port 0), the public page (the test's own site on 127.0.0.2 instead of the internet) and
 * where `bin/tintype` and the output files are. Every file it writes is checked.
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { blocksIn } from '../docs/markdown.ts';
import { cleanup, startService, type Service } from './service.ts';
import { startSite, type Site } from './site.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const README = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
const VERSION = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

/** The first ```sh block of the Quick start section. */
function quickStart(): string {
  const [block] = blocksIn(README, 'Quick start', 'sh');
  if (block === undefined) throw new Error('no sh block in the Quick start section');
  return `${block}\n`;
}

let svc: Service;
let site: Site;
let workDir: string;

t.before(async () => {
  site = await startSite();
  svc = await startService({ env: { GUARD_ALLOW_CIDRS: '127.0.0.2/32' } });
  workDir = mkdtempSync(path.join(os.tmpdir(), 'tintype-readme-'));
});
t.teardown(async () => {
  await svc.signal('SIGTERM');
  await site.close();
  rmSync(workDir, { recursive: true, force: true });
  cleanup();
});

t.test('the quick-start lines work as printed', async (t) => {
  const printed = quickStart();
  t.match(printed, /bin\/tintype keys create --plan free/, 'makes a key');
  for (const op of ['/v1/ping', '/v1/screenshot', '/v1/html-to-image', '/v1/pdf', '/v1/og']) t.match(printed, op, `one curl for ${op}`);
  t.match(svc.stdout(), /bin\/tintype keys create --plan free/, 'start-up says the same way to make a key');

  const script = printed
    .replaceAll('http://localhost:8080', `http://localhost:${svc.port}`)
    .replaceAll('https://example.com/', `${site.base}/page/readme`)
    .replaceAll('bin/tintype', path.join(ROOT, 'bin/tintype'));
  const run = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn('/usr/bin/env', ['-u', 'NODE_OPTIONS', 'bash', '-euo', 'pipefail', '-c', script], {
      cwd: workDir,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, TINTYPE_DATA_DIR: svc.dataDir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
  t.equal(run.code, 0, `the block runs to its end: ${run.stderr.slice(-500)}`);
  t.equal(run.stdout, `{"pong":true,"app":"tintype","version":"${VERSION}"}`, 'the ping prints what the README says');
  t.match(README, `{"pong":true,"app":"tintype","version":"${VERSION}"}`, 'the README shows the current version');

  const files: Array<[string, Buffer]> = [
    ['page.png', Buffer.from([0x89, 0x50, 0x4e, 0x47])],
    ['hello.png', Buffer.from([0x89, 0x50, 0x4e, 0x47])],
    ['hello.pdf', Buffer.from('%PDF')],
    ['card.png', Buffer.from([0x89, 0x50, 0x4e, 0x47])],
  ];
  for (const [name, magic] of files) {
    const body = readFileSync(path.join(workDir, name));
    t.ok(body.subarray(0, magic.length).equals(magic), `${name} is the file itself, not an error`);
  }
  const size = (png: Buffer): [number, number] => [png.readUInt32BE(16), png.readUInt32BE(20)];
  t.same(size(readFileSync(path.join(workDir, 'hello.png'))), [600, 200], 'hello.png is 600 x 200');
  t.same(size(readFileSync(path.join(workDir, 'card.png'))), [1200, 630], 'card.png is 1200 x 630');
  t.same(size(readFileSync(path.join(workDir, 'page.png'))), [1280, 800], 'page.png is 1280 x 800');
});
