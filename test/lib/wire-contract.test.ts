/**
 * The wire constants, each in its one home, against the word of the document that fixes it: the
 * spec (Parts 2.1 and 8), docs/architecture.md §2 for what crosses between roles, docs/operations.md "Settings" for
 * the admin paths, and Envoy for the attempt header it sends. Every other test and every role
 * imports these constants, so this is the one place their values are written twice; and the
 * lease-id and render-token forms at their bounds.
 */
import t from 'tap';
import { LIVE_PATH, METRICS_PATH, READY_PATH } from '../../lib/admin.ts';
import { GUARD_FAILURE_HEADER, GUARD_REASON_HEADER, RENDER_STATS_PATH, RENDER_TOKEN_FORM, renderAuthorization, renderStatsPath, renderTokenFrom, renderTokenFromPath } from '../../lib/guard-contract.ts';
import { RenderTokens } from '../../lib/render-token.ts';
import {
  ATTEMPT_HEADER, CACHE_OUTCOMES, CLAIM_PATH, CLAIM_STATUS, EXT_AUTHZ_PREFIX, KEY_ID_HEADER, LEASE_HEADER, LEASE_ID_FORM, MAX_BODY_BYTES, RATELIMIT_LIMIT_HEADER,
  RATELIMIT_REMAINING_HEADER, RELEASE_PATH, SETTLE_PATH,
} from '../../lib/policy-contract.ts';
import { STATE_PATH } from '../../lib/state-contract.ts';
import { newLeaseId } from '../../policy/secrets.ts';
import { BLOCKED_HEADER, CACHE_HEADER, OG_CACHE_CONTROL, RENDER_CACHE_CONTROL } from '../../renderer/server/answer-headers.ts';

t.test('each constant says what its document says', async (t) => {
  const rows: Array<[string, unknown, unknown]> = [
    ['spec Part 8: request body size', MAX_BODY_BYTES, 4_194_304],
    ['spec 2.1: rate-limit position', [RATELIMIT_LIMIT_HEADER, RATELIMIT_REMAINING_HEADER], ['x-ratelimit-limit', 'x-ratelimit-remaining']],
    ['spec 2.1: cache outcome', [CACHE_HEADER, ...CACHE_OUTCOMES], ['x-cache', 'hit', 'miss']],
    ['spec 2.1: refused sub-resources', BLOCKED_HEADER, 'x-render-blocked'],
    ['spec 2.1: cache-control of the renders and of og', [RENDER_CACHE_CONTROL, OG_CACHE_CONTROL], ['no-store', 'private, max-age=86400']],
    ['architecture §2: ext_authz and settle paths', [EXT_AUTHZ_PREFIX, SETTLE_PATH], ['/authz', '/settle']],
    ['architecture §2: claim and release paths', [CLAIM_PATH, RELEASE_PATH], ['/claim', '/release']],
    ['architecture §2: what a claim answers', CLAIM_STATUS, { claimed: 204, held: 409, spent: 410 }],
    ['architecture §2: lease and key id headers', [LEASE_HEADER, KEY_ID_HEADER], ['x-tintype-lease', 'x-tintype-key']],
    ['architecture §4: the attempt header Envoy sends', ATTEMPT_HEADER, 'x-envoy-attempt-count'],
    ['architecture §2: the guard\'s own headers', [GUARD_REASON_HEADER, GUARD_FAILURE_HEADER], ['x-guard-reason', 'x-guard-failure']],
    ['architecture §2: the tally path', RENDER_STATS_PATH, '/renders/'],
    ['architecture §2: the state report path', STATE_PATH, '/state'],
    ['docs/operations.md, Settings: the admin paths', [METRICS_PATH, LIVE_PATH, READY_PATH], ['/metrics', '/healthz/live', '/healthz/ready']],
  ];
  for (const [name, actual, word] of rows) t.same(actual, word, name);
});

t.test('a lease id is 1 to 64 base64url characters, and policy issues only such ids', async (t) => {
  const rows: Array<[string, string, boolean]> = [
    ['empty', '', false],
    ['one character', 'a', true],
    ['64 characters', 'a'.repeat(64), true],
    ['65 characters', 'a'.repeat(65), false],
    ['base64url alphabet', 'AZaz09-_', true],
    ['a dot (it would split a signed lease)', 'a.b', false],
    ['base64 padding', 'ab==', false],
    ['base64 plus and slash', 'a+b/c', false],
  ];
  for (const [name, id, ok] of rows) t.equal(LEASE_ID_FORM.test(id), ok, name);
  const issued = Array.from({ length: 100 }, () => newLeaseId());
  t.same(issued.filter((id) => !LEASE_ID_FORM.test(id)), [], 'every id newLeaseId issues is a lease id');
});

t.test('a render token is 16 to 64 base64url characters, named the same in Proxy-Authorization and in the tally path', async (t) => {
  const rows: Array<[string, string, boolean]> = [
    ['15 characters', 'a'.repeat(15), false],
    ['16 characters', 'a'.repeat(16), true],
    ['64 characters', 'a'.repeat(64), true],
    ['65 characters', 'a'.repeat(65), false],
    ['a slash', `${'a'.repeat(16)}/b`, false],
    ['a query', `${'a'.repeat(16)}?x=1`, false],
  ];
  for (const [name, token, ok] of rows) {
    t.equal(RENDER_TOKEN_FORM.test(token), ok, `form: ${name}`);
    t.equal(renderTokenFromPath(RENDER_STATS_PATH + token), ok ? token : undefined, `tally path: ${name}`);
    t.equal(renderTokenFrom(renderAuthorization(token)), ok ? token : undefined, `Proxy-Authorization: ${name}`);
  }
  const token = RenderTokens.generate().mint();
  t.ok(RENDER_TOKEN_FORM.test(token), 'a minted token is a render token');
  t.equal(renderTokenFromPath(renderStatsPath(token)), token, 'the renderer asks the path the guard reads');
  t.equal(renderTokenFromPath(`/other/${token}`), undefined, 'another path names no render');
});
