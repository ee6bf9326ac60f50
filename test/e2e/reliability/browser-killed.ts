/**
 * Chromium killed (every process of it) while renders are in flight: those renders answer 502
 * `render_failed` at once rather than waiting out their budget, a new Chromium serves the next
 * render, and no zombie is left behind.
 */
import { killTree } from '../../../renderer/browser/process-tree.ts';
import { within } from './fleet.ts';
import { ordinary, PAGE_BUDGET_MS, startPageService } from './pages.ts';
import { browserRoots, zombiesBelow } from './readings.ts';

export interface BrowserKilledFigures {
  in_flight: number;
  /** In-flight renders that answered 502 `render_failed`. */
  in_flight_502: number;
  /** The slowest of those answers, from the kill. */
  in_flight_answer_ms: number;
  /** From the kill to the first render answered 200. */
  recovery_ms: number;
  zombies: number;
}

export async function killBrowser(): Promise<BrowserKilledFigures> {
  const p = await startPageService();
  try {
    // Warm: a first render proves the browser is up before it is killed.
    await p.render('/v1/html-to-image', ordinary());
    const ids = ['held-a', 'held-b'];
    const inFlight = ids.map((id) => p.render('/v1/html-to-image', { html: `<img src="${p.site.base}/hold/${id}.png"><p>${id}</p>`, width: 320, height: 200 }));
    await Promise.all(ids.map((id) => p.site.arrived(id)));

    const killedAt = performance.now();
    for (const root of browserRoots(p.svc.pid)) killTree(root);
    const answered = await Promise.all(inFlight.map(async (r) => ({ ...(await r), ms: performance.now() - killedAt })));

    let recoveredAt = Number.NaN;
    await within(PAGE_BUDGET_MS * 6, async () => {
      const r = await p.render('/v1/html-to-image', ordinary());
      if (r.status === 200) recoveredAt = performance.now();
      return r.status === 200;
    });
    // The killed processes' parents reap them; give them a moment before counting.
    await within(5_000, () => zombiesBelow(p.svc.pid) === 0);
    return {
      in_flight: answered.length,
      in_flight_502: answered.filter((a) => a.status === 502 && a.error === 'render_failed').length,
      in_flight_answer_ms: Math.round(Math.max(...answered.map((a) => a.ms))),
      recovery_ms: Math.round(recoveredAt - killedAt),
      zombies: zombiesBelow(p.svc.pid),
    };
  } finally {
    await p.close();
  }
}
