/**
 * Sustained load through `tintype start` (docs/operations.md "What it survives"): a short run here, the
 * long one in `npm run bench -- soak`. The invariants: no 5xx but 503 `busy` or
 * `guard_unverified`, every request answered, no slot or lease held afterwards, and no lease
 * left to expire but one whose grant met the edge's ext_authz timeout.
 */
import t from 'tap';
import { sustainedLoad } from './sustained.ts';

t.test('sustained load leaves nothing held and answers no unexpected 5xx', async (t) => {
  const f = await sustainedLoad({ clients: 40, durationMs: 8_000, seed: 7 });
  t.ok(f.requests > 40, `requests were made (${f.requests})`);
  t.equal(f.unexpected_5xx, 0, `no 5xx but busy or guard_unverified: ${JSON.stringify(f.answers_by_status)}`);
  t.notOk(f.answers_by_status['no answer'], 'every request was answered');
  t.ok((f.answers_by_status['200'] ?? 0) > 0, 'some calls succeeded');
  t.equal(f.leaked_slots, 0, 'no render slot held');
  t.equal(f.leaked_leases, 0, 'no lease held');
  // A lease expires unsettled only when its grant met the edge's ext_authz timeout head-on.
  t.ok(f.unsettled_leases <= f.authz_errors, `unsettled leases only among the checks given up (${f.unsettled_leases} of ${f.authz_errors})`);
});
