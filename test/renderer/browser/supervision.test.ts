/**
 * Supervision (docs/architecture.md §6 last rule; spec Part 7 `render_failed`,
 * `render_timeout`): Chromium is replaced after N renders, past its memory bound and when it
 * crashes; a render on a crashed browser fails at once; the deadline covers the whole render
 * and destroys its context; no zombie process is left behind, after kills or after stop.
 */
import type { Page } from 'puppeteer-core';
import t from 'tap';
import { ServiceError } from '../../../lib/errors.ts';
import {
  alive,
  chromiumPid,
  cmdline,
  defunctChildren,
  html,
  inProcess,
  job,
  launchedPid,
  startGuard,
  startPool,
  startSite,
  treePids,
  until,
} from './helpers.ts';

/** The code a render failed with, or 'ok'. */
async function outcome(p: Promise<unknown>): Promise<string> {
  return p.then(
    () => 'ok',
    (err: unknown) => (err instanceof ServiceError ? err.code : `other: ${(err as Error).message}`),
  );
}

const NEVER_IDLE = `<!doctype html><body>busy<script>
  // One request after another, for ever: networkidle is never reached.
  (function again() { fetch('/poll?' + Math.random()).then((r) => r.text()).then(again, again); })();
</script>`;

t.test('replaced after N renders', async (t) => {
  const g = await startGuard(t);
  const pool = await startPool(t, inProcess(g), { config: { recycleAfterRenders: 2 } });
  const first = (await pool.render(job(async (page) => launchedPid(page)))).value;
  const firstTree = treePids(first);
  await pool.render(job(async () => undefined));
  t.equal(pool.stats().restarts, 1, 'the N-th render ordered a replacement');
  // The old browser serves until the new one is up (no render waits for a launch), then closes.
  await until(() => firstTree.every((pid) => !alive(pid)));
  t.pass('the old browser and all its processes ended');
  const now = (await pool.render(job(async (page) => launchedPid(page)))).value;
  t.not(now, first, 'a new browser serves');
  t.same(defunctChildren(), [], 'no zombie left');
});

// pod: Chromium's memory is read in its own container, by the launcher, and reported over the socket.
for (const isolation of ['netns', 'pod'] as const) {
  t.test(`${isolation}: replaced when its memory passes the bound`, async (t) => {
    const g = await startGuard(t);
    const lines: string[] = [];
    // A bound every Chromium is over: the check must notice and replace it.
    const pool = await startPool(t, inProcess(g), {
      config: { browserMaxRssMb: 1, isolation },
      lines,
      timings: { memoryCheckMs: 100 },
    });
    const first = (await pool.render(job(async (page) => launchedPid(page)))).value;
    await until(() => lines.some((l) => l.includes('"browser.memory_bound"')));
    let now = first;
    while (now === first) now = (await pool.render(job(async (page) => launchedPid(page)))).value;
    t.not(now, first, 'a new browser serves after the bound was passed');
    t.ok(pool.stats().restarts >= 1);
    const bound = JSON.parse(lines.find((l) => l.includes('"browser.memory_bound"'))!) as { rssMb: number };
    t.ok(bound.rssMb > 1, `its memory was read (${bound.rssMb} MiB)`);
  });
}

for (const isolation of ['netns', 'pod'] as const) {
  t.test(`${isolation}: deadline, crash mid-render, no zombies`, async (t) => {
    const g = await startGuard(t);
    let polls = 0;
    const site = await startSite(t, {
      '/never-idle': html(NEVER_IDLE),
      '/poll': (_req, res) => {
        polls += 1;
        setTimeout(() => res.writeHead(200, { 'content-type': 'text/plain' }).end('x'), 100);
      },
      '/hang': () => {
        // never answers
      },
      '/': html('<!doctype html><p>ok</p>'),
    });
    const pool = await startPool(t, inProcess(g), { config: { isolation } });
    const seenPids = new Set<number>();

    t.test('past the deadline: render_timeout, the context destroyed, the slot free', async (t) => {
      let page: Page | undefined;
      const r = pool.render(
        job(async (p) => {
          page = p;
          for (const pid of treePids(launchedPid(p))) seenPids.add(pid);
          await p.goto(`${site.origin}/never-idle`, { waitUntil: 'networkidle0', timeout: 0 });
          return 'idle';
        }, 2_500),
      );
      t.equal(await outcome(r), 'render_timeout');
      t.equal(pool.stats().busy, 0, 'the slot is free');
      t.ok(polls > 0, 'the page was polling when the deadline passed');
      await until(() => page!.isClosed());
      const after = polls;
      await pool.render(job(async (p) => p.goto(`${site.origin}/`, { waitUntil: 'load' })));
      t.equal(polls, after, 'the destroyed context polls no more');
    });

    t.test('the tabs\' renderer processes killed mid-render: render_failed, the browser serves on', async (t) => {
      let launched = 0;
      const hangsBefore = site.hits('/hang');
      const r = pool.render(
        job(async (p) => {
          launched = launchedPid(p);
          await p.goto(`${site.origin}/hang`, { waitUntil: 'load', timeout: 0 });
          return 'answered';
        }, 120_000),
      );
      await until(() => site.hits('/hang') === hangsBefore + 1);
      // Every renderer process: the render's own and those of the contexts prepared ahead.
      const renderers = treePids(launched).filter((pid) => cmdline(pid).join(' ').includes('--type=renderer'));
      t.ok(renderers.length > 0, 'the browser has renderer processes');
      for (const pid of renderers) process.kill(pid, 'SIGKILL');
      t.equal(await outcome(r), 'render_failed', 'the render in flight failed');
      // A context prepared ahead whose page died too may still be handed out before its crash
      // is reported; that render fails the same way. Then every lane serves again, same browser.
      const restarts = pool.stats().restarts;
      let served = 0;
      while (served < 3) {
        const next = await outcome(
          pool.render(
            job(async (p) => {
              await p.goto(`${site.origin}/`, { waitUntil: 'load' });
              if (launchedPid(p) !== launched) throw new Error('another browser');
            }),
          ),
        );
        if (next === 'ok') served += 1;
        else if (next === 'render_failed') served = 0;
        else {
          t.fail(next);
          break;
        }
      }
      t.pass('three renders in a row were served after the crash');
      t.equal(pool.stats().restarts, restarts, 'the browser was not replaced');
    });

    t.test('Chromium killed mid-render: render_failed at once, then a new browser', async (t) => {
      let launched = 0;
      const hangsBefore = site.hits('/hang');
      const r = pool.render(
        job(async (p) => {
          launched = launchedPid(p);
          for (const pid of treePids(launched)) seenPids.add(pid);
          await p.goto(`${site.origin}/hang`, { waitUntil: 'load', timeout: 0 });
          return 'answered';
        }, 120_000),
      );
      await until(() => site.hits('/hang') === hangsBefore + 1);
      process.kill(chromiumPid(launched), 'SIGKILL');
      t.equal(await outcome(r), 'render_failed', 'the render in flight failed (long before its deadline)');
      t.equal(pool.stats().busy, 0);
      const next = await pool.render(job(async (p) => launchedPid(p)));
      t.not(next.value, launched, 'the next render runs on a new browser');
      for (const pid of treePids(next.value)) seenPids.add(pid);
      t.ok(pool.stats().restarts >= 1, 'the restart is counted');
      await until(() => !alive(launched));
      t.same(defunctChildren(), [], 'no zombie after the kill');
    });

    t.test('after stop: every browser process gone, no zombie', async (t) => {
      await pool.stop();
      t.notOk(pool.healthy());
      t.same(defunctChildren(), [], 'no zombie child of the renderer');
      // netns: the PID namespace ends with Chromium and the kernel kills and reaps what was in it;
      // pod: the renderer kills the tree. Either way every process ever seen must go (tap's
      // timeout fails the test if one stays); the kernel may take a moment after stop() returns.
      await until(() => [...seenPids].every((pid) => !alive(pid)));
      t.pass('no process of any browser is left');
      t.equal(await outcome(pool.render(job(async () => 1))), 'busy', 'a stopped pool renders nothing');
    });
  });
}

t.test('a Chromium that cannot start: start() fails with the reason, nothing renders', async (t) => {
  const g = await startGuard(t);
  const lines: string[] = [];
  for (const isolation of ['netns', 'pod'] as const) {
    const pool = await startPool(t, inProcess(g), {
      config: { chromiumPath: '/nonexistent/chromium', isolation },
      lines,
      start: false,
    });
    t.match(await outcome(pool.start()), /^other: /, `${isolation}: start() rejects`);
    t.notOk(pool.selfTestPassed());
    t.equal(await outcome(pool.render(job(async () => 1))), 'guard_unverified', `${isolation}: renders are refused`);
    await pool.stop();
    t.notOk(pool.healthy());
  }
  t.ok(lines.some((l) => l.includes('"browser.launch_failed"')), 'the failure was logged');
  // A failed launch's launcher exits as puppeteer gives up, and is reaped a moment later.
  const reapedBy = Date.now() + 10_000;
  await until(() => defunctChildren().length === 0 || Date.now() > reapedBy);
  t.same(defunctChildren(), [], 'no zombie left by the failed launches');
});
