/**
 * A page that opens connections and WebSockets without end, to a site that resets them, rendered
 * again and again: every render ends while the page is still opening more, so the relays meet
 * connections cut by the teardown, CONNECTs arriving after their render ended, and resets from
 * both sides. In both isolation modes every render is answered, the browser and its relays are
 * never replaced for it, and (in pod isolation, where the relays live in this process) the
 * process lives on: an unhandled socket error would end this test's process.
 */
import t from 'tap';
import { html, inProcess, job, launchedPid, startGuard, startPool, startSite } from './helpers.ts';

const RENDERS = 6;

/**
 * Started once the page has loaded, and still running when the render returns: every few
 * milliseconds fetches the site resets, and CONNECTs (https fetches, WebSockets) to many
 * addresses the guard refuses, so tunnels are being opened and refused as the render ends and
 * its context closes.
 */
const STORM = `(() => {
  let n = 0;
  const storm = () => {
    for (let i = 0; i < 4; i++) fetch('/reset?' + Math.random()).catch(() => {});
    for (let i = 0; i < 4; i++) {
      n += 1;
      fetch('https://10.77.' + (n % 250) + '.' + (i + 1) + '/').catch(() => {});
      try { const ws = new WebSocket('ws://10.78.' + (n % 250) + '.' + (i + 1) + '/'); ws.onerror = () => {}; } catch {}
    }
  };
  storm();
  setInterval(storm, 25);
  return new Promise((resolve) => setTimeout(() => resolve(document.title), 150));
})()`;

for (const isolation of ['pod', 'netns'] as const) {
  t.test(`${isolation}: connections reset during the render's teardown end there`, async (t) => {
    const g = await startGuard(t);
    const site = await startSite(t, {
      '/': html('<!doctype html><title>storm</title><p id="p">storm</p>'),
      '/reset': (req) => req.socket.resetAndDestroy(),
    });
    // WebSockets reach the site through a tunnel; it has no upgrade handler, so Node drops them.
    const pool = await startPool(t, inProcess(g), { config: { isolation, slots: 2 } });
    const launched = new Set<number>();
    for (let i = 0; i < RENDERS; i += 1) {
      const results = await Promise.all(
        [0, 1].map(() =>
          pool.render(
            job(async (page) => {
              launched.add(launchedPid(page));
              await page.goto(`${site.origin}/`, { waitUntil: 'load' });
              return page.evaluate(STORM);
            }),
          ),
        ),
      );
      for (const r of results) t.equal(r.value, 'storm');
    }
    t.ok(site.hits('/reset') > 0, 'the page opened connections the site reset');
    t.equal(launched.size, 1, 'one browser served every render');
    t.equal(pool.stats().restarts, 0, 'it was never replaced');
  });
}
