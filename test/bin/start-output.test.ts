/**
 * What `tintype start` shows first (README "Quick start"; docs/security.md "Start-up self-test"):
 * at info the self-test's guard decisions are not there, one line says it passed and how many
 * refusals it proved; at debug the decisions are. On a pipe the start-up facts are one JSON line;
 * on a terminal (a pty from util-linux's script(1)) they read as sentences.
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cleanup, startService, type Service } from '../e2e/service.ts';
import { ROOT } from '../helm.ts';

interface Line { level: string; event: string; [field: string]: unknown }
const jsonLines = (text: string): Line[] => text.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Line);

/** Waits for /healthz/ready: the self-test has passed (spec Part 1). */
async function ready(svc: Service): Promise<void> {
  for (;;) {
    const ok = await fetch(`http://127.0.0.1:${svc.adminPort}/healthz/ready`).then((r) => r.ok, () => false);
    if (ok && svc.stderr().includes('guard.self_test_passed')) return;
    await new Promise((r) => setTimeout(r, 200));
  }
}

t.teardown(cleanup);

t.test('at info: no decision of the self-test, one line that it passed with the refusals it proved; stdout one JSON line', async (t) => {
  const svc = await startService({ env: { TINTYPE_LOG_LEVEL: 'info' } });
  t.teardown(() => svc.signal('SIGTERM'));
  await ready(svc);
  const lines = jsonLines(svc.stderr());
  t.same(lines.filter((l) => l.event === 'guard.decision'), [], 'no guard.decision line');
  const passed = lines.filter((l) => l.event === 'guard.self_test_passed');
  t.equal(passed.length, 1, 'one self_test_passed line');
  t.equal(passed[0]?.level, 'info');
  t.ok(Number(passed[0]?.blocked) > 0, `it proved ${String(passed[0]?.blocked)} refusals`);

  const out = svc.stdout().trimEnd().split('\n');
  t.equal(out.length, 1, 'one line on stdout');
  const facts = JSON.parse(out[0]!) as Line;
  t.match(facts, {
    level: 'info',
    event: 'start.listening',
    url: `http://localhost:${svc.port}`,
    openapi: `http://localhost:${svc.port}/openapi.json`,
    admin: `http://127.0.0.1:${svc.adminPort}`,
    dataDir: svc.dataDir,
    createKey: `TINTYPE_DATA_DIR=${svc.dataDir} bin/tintype keys create --plan free`,
  });
});

t.test('at debug: every decision of the self-test, at debug, at least as many refusals as it proved', async (t) => {
  const svc = await startService({ env: { TINTYPE_LOG_LEVEL: 'debug' } });
  t.teardown(() => svc.signal('SIGTERM'));
  await ready(svc);
  const lines = jsonLines(svc.stderr());
  const decisions = lines.filter((l) => l.event === 'guard.decision');
  const blocked = Number(lines.find((l) => l.event === 'guard.self_test_passed')?.blocked);
  t.ok(blocked > 0);
  t.ok(decisions.filter((l) => l.decision === 'refused').length >= blocked, `${decisions.length} decisions for ${blocked} refusals`);
  t.same([...new Set(decisions.map((l) => l.level))], ['debug'], 'all at debug');
});

t.test('on a terminal: sentences saying where it listens, where state is and how to make a key', async (t) => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'tintype-tty-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  // script(1) runs the command on a pty of its own and copies what it writes to its stdout.
  const command = `exec env -u NODE_OPTIONS ${path.join(ROOT, 'bin/tintype')} start`;
  const child = spawn('script', ['-qec', command, '/dev/null'], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, TINTYPE_DATA_DIR: dataDir, PORT: '0', TINTYPE_ADMIN_PORT: '0', CHROMIUM_PATH: '/usr/bin/chromium-headless-shell' },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  let out = '';
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  // Closing the pty (script ending) hangs tintype up, should the test end before Ctrl-C.
  t.teardown(() => { if (child.exitCode === null) child.kill('SIGTERM'); });
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString('utf8');
      if (/guard\.self_test_passed/.test(out) && /Create a key with: .*\r?\n/.test(out)) resolve();
    });
    void closed.then(() => reject(new Error(`tintype start ended:\n${out.slice(-2000)}`)));
  });
  child.stdin.write('\x03'); // Ctrl-C at the terminal
  await closed;
  const text = out.replace(/\r/g, '');
  t.match(text, /^tintype is listening on http:\/\/localhost:\d+ \(the OpenAPI document is at http:\/\/localhost:\d+\/openapi\.json\)\.$/m);
  t.match(text, new RegExp(`^Metrics, /healthz/live and /healthz/ready are on http://127\\.0\\.0\\.1:\\d+; /usage and /egress on the unix socket ${dataDir}/admin\\.sock\\.$`, 'm'));
  t.match(text, new RegExp(`^State and cache are kept in ${dataDir}\\.$`, 'm'));
  t.match(text, new RegExp(`^Create a key with: TINTYPE_DATA_DIR=${dataDir} bin/tintype keys create --plan free$`, 'm'));
  t.notMatch(text, /"event":"start\.listening"/, 'not the JSON line of a pipe');
  t.notMatch(text, /"event":"guard\.decision"/, 'and no decision of the self-test');
});
