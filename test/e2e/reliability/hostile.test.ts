/**
 * Hostile pages (docs/operations.md "What it survives"): each answers as said, and neither the
 * ordinary render on the other slot nor the one after it is disturbed.
 */
import t from 'tap';
import { hostilePages } from './hostile.ts';

t.setTimeout(600_000);

t.test('no hostile page disturbs another render', async (t) => {
  const f = await hostilePages();
  for (const r of f.hostile_results) t.comment(JSON.stringify(r));
  t.equal(f.hostile_pages_ok, f.hostile_pages, 'every hostile page answered as said, beside and after it ordinary renders were served');
});
