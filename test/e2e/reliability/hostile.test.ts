/**
 * Hostile pages (docs/operations.md "What it survives"): each answers as said, and neither the
 * ordinary render on the other slot nor the one after it is disturbed.
 */
import t from 'tap';
import { HOSTILE, answeredAsSaid, hostilePages } from './hostile.ts';
import { startPageService } from './pages.ts';

t.setTimeout(600_000);

t.test('no hostile page disturbs another render', async (t) => {
  const f = await hostilePages();
  for (const r of f.hostile_results) t.comment(JSON.stringify(r));
  t.equal(f.hostile_pages_ok, f.hostile_pages, 'every hostile page answered as said, beside and after it ordinary renders were served');
});

t.test('the endless allocation answers as said when the render budget ends it first', async (t) => {
  // The shortest budget there is: allocating until V8's heap is spent takes longer, as it does on
  // a busy machine with the default one, so the budget ends the render: 504 render_timeout.
  const p = await startPageService({ TINTYPE_RENDER_TIMEOUT_MS: '1000' });
  t.teardown(() => p.close());
  const page = HOSTILE.find((h) => h.name === 'allocates memory without end')!;
  const answer = await p.render(page.path, page.body(p));
  t.comment(JSON.stringify(answer));
  t.ok(answeredAsSaid(page, answer), `${JSON.stringify(answer)} is an answer the README gives for this page`);
  t.notOk(answeredAsSaid(page, { status: 502, error: 'render_timeout' }), 'and nothing else: a mismatched status and error is not');
  t.notOk(answeredAsSaid(page, { status: 200 }), 'nor a 200');
});
