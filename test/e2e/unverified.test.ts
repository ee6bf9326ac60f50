/**
 * The two Part 7 rows one ordinary instance cannot give: 503 `guard_unverified` (the start-up
 * self-test has not passed, so nothing is rendered) and 502 `render_too_large` (output over
 * TINTYPE_MAX_OUTPUT_BYTES). Here every range is opened on purpose (GUARD_ALLOW_CIDRS), so the
 * self-test can prove nothing and never passes; OG cards, drawn without the browser, still
 * answer, and at a 1,024-byte ceiling each card is too large.
 */
import t from 'tap';
import { againstDocument, cleanup, json, jsonWith, startService, type Service } from './service.ts';

let svc: Service;

t.before(async () => {
  svc = await startService({
    env: { GUARD_ALLOW_CIDRS: '0.0.0.0/0,::/0', TINTYPE_MAX_OUTPUT_BYTES: '1024', TINTYPE_SLOTS: '1' },
  });
});
t.teardown(async () => {
  await svc.signal('SIGTERM');
  cleanup();
});

t.test('self-test not passed: not ready, and renders answer 503 guard_unverified, no usage', async (t) => {
  const ready = await fetch(`http://127.0.0.1:${svc.adminPort}/healthz/ready`);
  t.equal(ready.status, 503, 'not ready');
  const k = await svc.key('pro');
  const rows: Array<[string, unknown]> = [
    ['/v1/html-to-image', { html: '<p>x</p>', width: 20, height: 20 }],
    ['/v1/pdf', { html: '<p>x</p>' }],
  ];
  for (const [path, body] of rows) {
    const a = await svc.call({ method: 'POST', path, headers: jsonWith(k.secret), body: JSON.stringify(body) });
    t.same(againstDocument('POST', path, a), [], `${path}: conforms to the OpenAPI document`);
    t.equal(a.status, 503, path);
    t.same(json(a), { error: 'guard_unverified' });
    t.equal(a.headers['retry-after'], undefined, 'no retry-after: only busy carries one (spec 2.1)');
  }
  await svc.leasesClosed(k.id);
  t.same(svc.ledger(k.id), [], 'settled, writing no usage (503s write none: docs/architecture.md §6)');
  t.equal(svc.used(k.id), 0);
});

t.test('output over the maximum: 502 render_too_large, metered, not cached', async (t) => {
  const k = await svc.key('pro');
  const path = '/v1/og?template=title&title=Too%20large%20for%20the%20ceiling';
  for (let i = 0; i < 2; i++) {
    const a = await svc.call({ path, headers: jsonWith(k.secret) });
    t.same(againstDocument('GET', path, a), [], 'conforms to the OpenAPI document');
    t.equal(a.status, 502);
    t.same(json(a), { error: 'render_too_large' });
  }
  const ledger = await svc.ledgerOf(k.id, 2);
  t.same(ledger.map((r) => [r.status, r.error, r.cache, r.metered]), [[502, 'render_too_large', null, 1], [502, 'render_too_large', null, 1]], 'metered both times: nothing was cached');
  t.equal(svc.used(k.id), 2);
});

t.test('SIGTERM: exit 0', async (t) => {
  t.equal(await svc.signal('SIGTERM'), 0);
});
