/**
 * The roles apart (test/e2e/apart.ts): a renderer pod whose every slot is taken answers 503
 * `busy` before taking a slot and leaves the lease open; the edge sends the render once more to
 * the other pod with the same lease (as envoy/envoy.yaml's retry with `previous_hosts`), so the
 * caller gets the render, metered once, and never the busy answer while a pod is free.
 */
import t from 'tap';
import { startApartWithSite, type Apart } from './apart.ts';
import { jsonWith } from './service.ts';
import type { Site } from './site.ts';

// Six processes and two Chromiums start on a shared machine: longer than the default limit.
t.setTimeout(600_000);
/** A namespace id of its own per run (1–250), apart from apart.test.ts's when both run at once. */
const NET_ID = 1 + ((process.pid + 125) % 250);

let apart: Apart;
let site: Site;

t.before(async () => {
  ({ apart, site } = await startApartWithSite(NET_ID, {
    // Long enough that the held render outlasts the renders sent past it on a loaded machine.
    renderTimeoutMs: 30_000,
    slots: 1,
    plans: { apart: { monthlyQuota: 1000, perMinute: 1000, concurrentRenders: 4 } },
  }));
});

t.teardown(() => apart?.stop());

/** How many renders a pod answered `busy` (its renders counter, every operation). */
async function busyAnswers(pod: 'r1' | 'r2'): Promise<number> {
  const text = await apart.podMetrics(pod);
  let n = 0;
  for (const m of text.matchAll(/^tintype_renders_total\{[^}]*outcome="busy"[^}]*\} (\d+)$/gm)) n += Number(m[1]);
  return n;
}

t.test("a busy pod's render retried on the other pod and metered once", async (t) => {
  const k = await apart.key('apart');
  const held = `retry-${Date.now()}`;
  const holding = apart.call({ method: 'POST', path: '/v1/html-to-image', headers: jsonWith(k.secret), body: JSON.stringify({ html: `<img src="${site.base}/hold/${held}.png">`, width: 50, height: 50 }) });
  await site.arrived(held);
  // The full pod is the one whose only slot is in use.
  const full = /^tintype_render_slots_busy 1$/m.test(await apart.podMetrics('r1')) ? 'r1' : 'r2';
  const before = await busyAnswers(full);
  // Renders one after another until one was sent to the full pod first (the pods are taken in
  // turn, so the first or second is); every one of them is answered by the other pod.
  const answers = [];
  for (let i = 0; i < 6 && (await busyAnswers(full)) === before; i++) {
    answers.push(await apart.call({ method: 'POST', path: '/v1/html-to-image', headers: jsonWith(k.secret), body: JSON.stringify({ html: `<p>retry ${held} ${i}</p>`, width: 50, height: 50 }) }));
  }
  t.ok((await busyAnswers(full)) > before, `a render reached the full pod (${full}) first and was answered busy there`);
  t.same(answers.map((a) => a.status), answers.map(() => 200), 'every render served: the busy answer was retried on the other pod, not passed on');
  site.release(held);
  t.equal((await holding).status, 200, 'the held render completes');
  const n = answers.length + 1;
  let rows = await apart.ledger(k.id);
  while (rows.length < n || (await apart.openLeases(k.id)) > 0) {
    await new Promise((r) => setTimeout(r, 50));
    rows = await apart.ledger(k.id);
  }
  t.same(rows.map((r) => [r.operation, r.status, r.metered, r.outcome]), rows.map(() => ['html-to-image', 200, 1, 'settled']),
    'one settled, metered row per render: the retried lease was settled once, by the pod that rendered');
  t.equal(rows.length, n, 'no row for the busy attempt');
  t.equal(await apart.used(k.id), n, 'quota spent once per render');
});
