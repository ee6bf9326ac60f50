/**
 * Chromium's whole process tree killed during renders (docs/operations.md "What it survives"): the
 * renders in flight answer 502 `render_failed` (not 504 after their budget), the next render is
 * served by a new Chromium, and no zombie is left.
 */
import t from 'tap';
import { killBrowser } from './browser-killed.ts';

t.test('a killed Chromium fails its renders at once and is replaced', async (t) => {
  const f = await killBrowser();
  t.equal(f.in_flight_502, f.in_flight, 'every in-flight render answered 502 render_failed');
  t.ok(Number.isFinite(f.recovery_ms), 'a later render was served');
  t.equal(f.zombies, 0, 'no zombie process');
});
