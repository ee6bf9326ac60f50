import t from 'tap';
import { ServiceError, ValidationFailure, answerFor, isMetered } from '../../lib/errors.ts';

t.test('each code answers the spec status, body and headers', async (t) => {
  t.same(new ServiceError('unauthorized').answer(), {
    status: 401,
    headers: { 'content-type': 'application/json; charset=utf-8', 'www-authenticate': 'Bearer' },
    body: { error: 'unauthorized' },
  });
  const busy = new ServiceError('busy').answer();
  t.equal(busy.status, 503);
  t.equal(busy.headers['retry-after'], '1');
  const limited = new ServiceError('rate_limited', { limit: 60, windowSec: 60, retryAfterSec: 17 }).answer();
  t.equal(limited.status, 429);
  t.equal(limited.headers['retry-after'], '17');
  t.same(limited.body, { error: 'rate_limited', limit: 60, windowSec: 60, retryAfterSec: 17 });
  t.same(new ServiceError('url_rejected', { reason: 'private_address' }).answer().body, {
    error: 'url_rejected',
    reason: 'private_address',
  });
  t.equal(new ServiceError('render_timeout').answer().status, 504);
  t.equal(new ServiceError('payload_too_large').answer().status, 413);
});

t.test('validation report names every failing field by path', async (t) => {
  const a = new ValidationFailure([
    { path: 'width', message: 'width must be less than or equal to 2000' },
    { path: 'quality', message: 'quality applies to jpeg only' },
  ]).answer();
  t.equal(a.status, 400);
  t.equal((a.body as any).success, false);
  t.match((a.body as any).error.message, /width/);
  t.match((a.body as any).error.message, /quality/);
});

t.test('unknown errors become render_failed, metering follows Part 8', async (t) => {
  t.equal(answerFor(new Error('boom')).body.error, 'render_failed');
  for (const s of [200, 502, 504]) t.ok(isMetered(s), `${s} metered`);
  for (const s of [400, 401, 413, 422, 429, 503]) t.notOk(isMetered(s), `${s} not metered`);
});
