/** The OpenAPI document: valid OpenAPI 3.1, and it says what the spec says. */
import t from 'tap';
import { Validator } from '@seriousme/openapi-schema-validator';
import { openapiDocument, openapiJson } from '../../renderer/openapi/document.ts';
import { OPERATIONS, RATELIMIT_LIMIT_HEADER, RATELIMIT_REMAINING_HEADER } from '../../lib/policy-contract.ts';
import { checkAnswer, checkRequest } from './openapi-check.ts';
import { BLOCKED_HEADER, CACHE_HEADER } from '../../renderer/server/answer-headers.ts';

const doc = openapiDocument as any;

t.test('a valid OpenAPI 3.1.0 document, info version 1.0.0 (spec Part 9)', async (t) => {
  const validator = new Validator();
  const res = await validator.validate(JSON.parse(openapiJson().toString('utf8')));
  t.same(res.errors ?? [], [], 'no validator errors');
  t.equal(res.valid, true);
  t.equal(validator.version, '3.1');
  t.equal(doc.openapi, '3.1.0');
  t.equal(doc.info.version, '1.0.0');
});

t.test('every operation of spec Part 4 is described, with its failures', async (t) => {
  const expected: Record<string, string[]> = {
    ping: ['200', '401', '429'],
    screenshot: ['200', '400', '401', '408', '413', '422', '429', '502', '503', '504'],
    'html-to-image': ['200', '400', '401', '408', '413', '422', '429', '502', '503', '504'],
    pdf: ['200', '400', '401', '408', '413', '422', '429', '502', '503', '504'],
    og: ['200', '400', '401', '429', '502', '503', '504'],
  };
  for (const [name, d] of Object.entries(OPERATIONS)) {
    const op = doc.paths[d.path]?.[d.method.toLowerCase()];
    t.ok(op, `${d.method} ${d.path}`);
    t.same(Object.keys(op.responses).sort(), expected[name]!.sort(), `${name} responses`);
  }
  t.same(Object.keys(doc.paths).sort(), Object.values(OPERATIONS).map((o) => o.path).sort());
});

t.test('request schemas accept the spec defaults and refuse its boundaries', async (t) => {
  const rows: Array<[string, string, unknown, boolean]> = [
    ['screenshot minimal', '/v1/screenshot', { url: 'https://example.com/' }, true],
    ['screenshot width 2000', '/v1/screenshot', { url: 'https://e.com', width: 2000 }, true],
    ['screenshot width 2001', '/v1/screenshot', { url: 'https://e.com', width: 2001 }, false],
    ['screenshot width 0', '/v1/screenshot', { url: 'https://e.com', width: 0 }, false],
    ['screenshot quality with jpeg', '/v1/screenshot', { url: 'https://e.com', format: 'jpeg', quality: 80 }, true],
    ['screenshot quality with png', '/v1/screenshot', { url: 'https://e.com', format: 'png', quality: 80 }, false],
    ['screenshot quality alone (png default)', '/v1/screenshot', { url: 'https://e.com', quality: 80 }, false],
    ['screenshot extra field', '/v1/screenshot', { url: 'https://e.com', x: 1 }, false],
    ['screenshot url 2049', '/v1/screenshot', { url: 'https://e.com/' + 'a'.repeat(2035) }, false],
    ['html-to-image digits', '/v1/html-to-image', { html: '<p>x', width: '300', deviceScaleFactor: '1.5' }, true],
    ['html-to-image boolean string', '/v1/html-to-image', { html: '<p>x', omitBackground: 'true' }, false],
    ['html-to-image url field', '/v1/html-to-image', { html: '<p>x', url: 'https://e.com' }, false],
    ['pdf url', '/v1/pdf', { url: 'https://e.com' }, true],
    ['pdf html with margins', '/v1/pdf', { html: '<p>x', margin: { top: '10mm', left: '0.5in' } }, true],
    ['pdf both', '/v1/pdf', { html: '<p>x', url: 'https://e.com' }, false],
    ['pdf neither', '/v1/pdf', {}, false],
    ['pdf em margin', '/v1/pdf', { html: '<p>x', margin: { top: '1em' } }, false],
    ['pdf bare number margin', '/v1/pdf', { html: '<p>x', margin: { top: '10' } }, false],
    ['pdf pageRanges 41', '/v1/pdf', { html: '<p>x', pageRanges: '1'.repeat(41) }, false],
    ['pdf scale 0.1', '/v1/pdf', { html: '<p>x', scale: 0.1 }, true],
    ['pdf scale 2.1', '/v1/pdf', { html: '<p>x', scale: 2.1 }, false],
  ];
  for (const [name, path, body, ok] of rows) t.equal(checkRequest(path, body).length === 0, ok, name);
});

t.test('the answer checker catches departures from the document', async (t) => {
  const json = { 'content-type': 'application/json; charset=utf-8' };
  const pos = { [RATELIMIT_LIMIT_HEADER]: '60', [RATELIMIT_REMAINING_HEADER]: '59' };
  const ok = (path: string, method: string, status: number, headers: Record<string, string>, body: unknown) =>
    checkAnswer({ path, method, status, headers, body: Buffer.isBuffer(body) ? body : Buffer.from(JSON.stringify(body)) });
  t.same(ok('/v1/ping', 'GET', 200, { ...json, ...pos }, { pong: true, app: 'tintype', version: '0.1.0' }), []);
  t.not(ok('/v1/ping', 'GET', 200, json, { pong: true, app: 'tintype', version: '0.1.0' }).length, 0, 'position missing');
  t.not(ok('/v1/ping', 'GET', 200, { ...json, ...pos }, { pong: false, app: 'tintype', version: '1' }).length, 0, 'pong false');
  t.not(ok('/v1/ping', 'GET', 503, { ...json, ...pos }, { error: 'busy' }).length, 0, 'ping never 503');
  t.same(ok('/v1/pdf', 'POST', 401, { ...json, 'www-authenticate': 'Bearer' }, { error: 'unauthorized' }), []);
  t.not(ok('/v1/pdf', 'POST', 401, json, { error: 'unauthorized' }).length, 0, 'www-authenticate missing');
  t.same(ok('/v1/pdf', 'POST', 429, { ...json, ...pos }, { error: 'concurrent_limit', limit: 1 }), []);
  t.not(ok('/v1/ping', 'GET', 429, { ...json, ...pos }, { error: 'concurrent_limit', limit: 1 }).length, 0, 'ping has no concurrent_limit');
  t.not(ok('/v1/pdf', 'POST', 429, { ...json, ...pos }, { error: 'rate_limited', limit: 60 }).length, 0, 'extra fields missing');
  t.same(ok('/v1/screenshot', 'POST', 422, json, { error: 'url_rejected', reason: 'private_address' }), []);
  t.not(ok('/v1/screenshot', 'POST', 422, json, { error: 'url_rejected', reason: 'nope' }).length, 0, 'unknown reason');
  const png = { 'content-type': 'image/png', 'cache-control': 'no-store', [CACHE_HEADER]: 'miss', [BLOCKED_HEADER]: '0', ...pos };
  t.same(ok('/v1/html-to-image', 'POST', 200, png, Buffer.from([0x89, 0x50])), []);
  t.not(ok('/v1/html-to-image', 'POST', 200, { ...png, [CACHE_HEADER]: 'warm' }, Buffer.from([1])).length, 0, 'x-cache value');
  t.not(ok('/v1/og', 'GET', 200, png, Buffer.from([1])).length, 0, 'og cache-control differs');
  t.same(ok('/v1/og', 'GET', 200, { ...png, 'cache-control': 'private, max-age=86400' }, Buffer.from([1])), []);
  t.same(ok('/v1/pdf', 'POST', 400, json, { success: false, error: { name: 'ValidationError', message: 'url: give exactly one' } }), []);
  t.same(ok('/v1/pdf', 'POST', 503, { ...json, 'retry-after': '1' }, { error: 'busy' }), []);
  t.not(ok('/v1/pdf', 'POST', 503, { ...json, 'retry-after': '5' }, { error: 'busy' }).length, 0, 'busy retries after 1');
});
