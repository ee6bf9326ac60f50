/**
 * The start-up self-test (docs/security.md "Start-up self-test"; spec Part 7 `guard_unverified`): canaries
 * on loopback and on another local address, a page that tries every way out, and the check that
 * the canaries saw nothing while the guard counted refusals. Until it passes, every render is
 * `guard_unverified`; with no guard, an open guard or a guard that counts nothing it never passes.
 */
import path from 'node:path';
import t from 'tap';
import { ServiceError } from '../../../lib/errors.ts';
import { createGuard } from '../../../guard/index.ts';
import { testGuardTokens } from '../../lib/leases.ts';
import { canaryAddresses, runSelfTest, selfTestPage } from '../../../renderer/browser/self-test.ts';
import { inProcess, job, quietLogger, startGuard, startPool, tempDir, until } from './helpers.ts';
import { startStandInGuard } from './stand-in-guard.ts';

async function code(p: Promise<unknown>): Promise<string> {
  return p.then(
    () => 'ok',
    (err: unknown) => (err instanceof ServiceError ? err.code : `other: ${(err as Error).message}`),
  );
}

function failures(lines: string[]): string[] {
  return lines
    .map((l) => JSON.parse(l) as { event: string; detail?: string })
    .filter((l) => l.event === 'guard.self_test_failed')
    .map((l) => l.detail ?? '');
}

t.test('the canaries: loopback and another local address; operator-opened ranges left out', async (t) => {
  const all = canaryAddresses([]);
  t.ok(all.includes('127.0.0.1'), 'loopback');
  t.ok(all.includes('127.0.0.2'), 'a second loopback address');
  t.ok(
    all.some((a) => !a.startsWith('127.') && a !== '::1'),
    'an address of a real interface',
  );
  t.notOk(canaryAddresses(['127.0.0.0/8']).some((a) => a.startsWith('127.')), 'GUARD_ALLOW_CIDRS ranges are not canaries');
  const page = selfTestPage([{ address: '127.0.0.1', port: 4567 }]);
  for (const way of ['<img', '<link rel="stylesheet"', '<iframe src=', 'http-equiv=&quot;refresh', 'fetch(', 'new WebSocket', "'wss'", '0x7f.0.0.1', '2130706433', 'localhost']) {
    t.ok(page.includes(way), `the page tries ${way}`);
  }
});

t.test('with the real guard it passes: no canary reached, refusals counted', async (t) => {
  const g = await startGuard(t);
  const pool = await startPool(t, inProcess(g));
  t.ok(pool.selfTestPassed(), 'passed at start');
  // Run it once more through the verified pool to read its report.
  const report = await runSelfTest({ render: (j) => pool.render(j), budgetMs: 20_000, allowCidrs: [] });
  t.equal(report.passed, true);
  t.equal(report.canaryConnections, 0, 'the canaries saw zero connections');
  t.ok(report.blocked >= 10, `the guard counted the refusals (${report.blocked})`);
});

t.test('no guard: guard_unverified until one appears, then it passes', async (t) => {
  const socketPath = path.join(tempDir(t), 'guard.sock');
  const lines: string[] = [];
  // No in-process tally: the pool asks the (absent) guard over its socket.
  const pool = await startPool(t, { socketPath }, { lines, timings: { selfTestRetryMs: 300 } });
  t.notOk(pool.selfTestPassed(), 'the self-test did not pass');
  t.ok(pool.healthy(), 'the pool itself is up (liveness)');
  t.equal(await code(pool.render(job(async () => 'x'))), 'guard_unverified', 'a render is refused');
  t.match(failures(lines)[0], /test render failed/, 'the failure was logged');

  const guard = createGuard({ socket: socketPath, tokens: testGuardTokens, logger: quietLogger() });
  await guard.start();
  t.teardown(() => guard.stop());
  await until(() => pool.selfTestPassed());
  t.pass('the retried self-test passed once the guard listened');
  t.equal(await code(pool.render(job(async () => 'x'))), 'ok', 'and renders are served');
});

for (const mode of ['open', 'uncounted'] as const) {
  t.test(`a guard that ${mode === 'open' ? 'lets private addresses through' : 'counts no refusal'}: never verified`, async (t) => {
    const socketPath = path.join(tempDir(t), 'guard.sock');
    const standIn = await startStandInGuard({ socketPath, mode });
    t.teardown(() => standIn.close());
    const lines: string[] = [];
    const pool = await startPool(t, { socketPath }, { lines });
    t.notOk(pool.selfTestPassed(), 'the self-test did not pass');
    t.ok(standIn.requests() > 0, 'the test page did reach the guard');
    t.equal(await code(pool.render(job(async () => 'x'))), 'guard_unverified');
    t.match(failures(lines)[0], mode === 'open' ? /canary was reached/ : /counted no refusal/);
  });
}

t.test('a guard lost after the self-test passed: guard_unverified, not render_failed, until it passes again', async (t) => {
  const g = await startGuard(t);
  const lines: string[] = [];
  // The tally is read over the guard's socket, as a renderer does when the guard runs apart.
  const pool = await startPool(t, { socketPath: g.socketPath }, { lines, timings: { selfTestRetryMs: 300 } });
  t.ok(pool.selfTestPassed(), 'verified at start');
  t.equal(await code(pool.render(job(async () => 'x'))), 'ok');

  await g.guard.stop();
  t.equal(await code(pool.render(job(async () => 'x'))), 'guard_unverified', 'the render that finds the guard gone is 503, not metered');
  t.notOk(pool.selfTestPassed(), 'the walls are no longer counted as proven (readiness fails)');
  t.equal(await code(pool.render(job(async () => 'x'))), 'guard_unverified', 'the next render is refused at once');
  t.ok(lines.some((l) => (JSON.parse(l) as { event: string }).event === 'guard.lost'), 'the loss is logged');

  const back = createGuard({ socket: g.socketPath, tokens: testGuardTokens, logger: quietLogger() });
  await back.start();
  t.teardown(() => back.stop());
  await until(() => pool.selfTestPassed());
  t.pass('the self-test passed again once a guard listened');
  t.equal(await code(pool.render(job(async () => 'x'))), 'ok', 'and renders are served again');
});
