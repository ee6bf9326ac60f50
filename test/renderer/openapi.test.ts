/**
 * The OpenAPI document (renderer/openapi/document.ts) against the code it describes, so the two
 * cannot drift: every request body against what its yup schema enforces (bounds, enums, defaults,
 * patterns, required fields), every OG parameter against what the query parser accepts, and every
 * error answer against the catalogue of lib/errors.ts (the code, its status, its headers). The
 * spec's own values are held by test/e2e/openapi.test.ts and the schema tests.
 */
import t, { type Test } from 'tap';
import type { AnySchema, SchemaDescription, SchemaObjectDescription } from 'yup';
import { ERROR_STATUS, REJECT_REASONS, ServiceError, ValidationFailure, type ErrorCode } from '../../lib/errors.ts';
import { OPERATIONS, RATELIMIT_LIMIT_HEADER, RATELIMIT_REMAINING_HEADER } from '../../lib/policy-contract.ts';
import { openapiDocument } from '../../renderer/openapi/document.ts';
import { DRAWS, REQUIRES, TEMPLATES, TEXT_FIELDS, type Template, type TextField } from '../../renderer/og/fields.ts';
import { parseOgQuery } from '../../renderer/og/query.ts';
import { htmlToImageSchema, pdfSchema, screenshotSchema } from '../../renderer/schemas/index.ts';
import { checkAnswer } from '../e2e/openapi-check.ts';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
const doc = openapiDocument as unknown as Obj;

function deref(node: Obj): Obj {
  let n = node;
  while (typeof n['$ref'] === 'string') n = (n['$ref'] as string).replace(/^#\//, '').split('/').reduce((o: Obj, k) => o[k], doc);
  return n;
}

/** The facets of JSON Schema that a yup field's description states. */
function facetsOf(d: SchemaDescription): Obj {
  const out: Obj = {};
  const tests = new Map(d.tests.map((x) => [x.name, x.params] as const));
  out['type'] = d.type === 'number' && tests.has('integer') ? 'integer' : d.type;
  const [lo, hi] = d.type === 'string' ? ['minLength', 'maxLength'] : ['minimum', 'maximum'];
  if (tests.has('min')) out[lo] = tests.get('min')!['min'];
  if (tests.has('max')) out[hi] = tests.get('max')!['max'];
  if (tests.has('matches')) out['pattern'] = (tests.get('matches')!['regex'] as RegExp).source;
  if (d.oneOf.length > 0) out['enum'] = d.oneOf;
  if ('default' in d && d.default !== undefined) out['default'] = d.default;
  return out;
}

/** The same facets as the document states them (the number form of a field that also takes digits). */
function documented(field: Obj): Obj {
  const f = Array.isArray(field['anyOf']) ? (field['anyOf'] as Obj[])[0]! : field;
  const out: Obj = {};
  for (const k of ['type', 'minimum', 'maximum', 'minLength', 'maxLength', 'pattern', 'enum', 'default']) {
    if (f[k] !== undefined) out[k] = f[k];
  }
  return out;
}

/** Holds a document object schema to a yup object schema, field by field, nested objects included. */
function sameObject(t: Test, where: string, documentedObject: Obj, described: SchemaObjectDescription): void {
  const fields = described.fields as Record<string, SchemaDescription>;
  t.same(Object.keys(documentedObject['properties']), Object.keys(fields), `${where}: the same fields`);
  t.equal(documentedObject['additionalProperties'], false, `${where}: other fields are refused, as the validator refuses them`);
  const required = Object.entries(fields).filter(([, d]) => !d.optional).map(([k]) => k);
  t.same(documentedObject['required'] ?? [], required, `${where}: the same required fields`);
  for (const [name, d] of Object.entries(fields)) {
    const field = deref(documentedObject['properties'][name]);
    if (d.type === 'object') sameObject(t, `${where}.${name}`, field, d as SchemaObjectDescription);
    else t.same(documented(field), facetsOf(d), `${where}.${name}`);
  }
}

t.test('every request body says what its schema enforces', async (t) => {
  const bodies: Array<[string, AnySchema]> = [
    ['screenshot', screenshotSchema],
    ['html-to-image', htmlToImageSchema],
    ['pdf', pdfSchema],
  ];
  for (const [operation, schema] of bodies) {
    const path = OPERATIONS[operation as keyof typeof OPERATIONS].path;
    const body = deref(doc['paths'][path]['post']['requestBody']['content']['application/json']['schema']);
    sameObject(t, operation, body, schema.describe() as SchemaObjectDescription);
  }
});

/** The issues parseOgQuery reports for a query, by path. */
function ogIssues(query: Record<string, string>): string[] {
  try {
    parseOgQuery(new URLSearchParams(query));
    return [];
  } catch (err) {
    if (err instanceof ValidationFailure) return err.issues.map((i) => i.path);
    throw err;
  }
}

/** A query the parser accepts for `template`: its required fields, each one character. */
function minimalQuery(template: Template): Record<string, string> {
  return { template, ...Object.fromEntries(REQUIRES[template].map((f) => [f, 'x'])) };
}

t.test('every OG parameter says what the query parser accepts', async (t) => {
  const params = doc['paths'][OPERATIONS.og.path]['get']['parameters'] as Obj[];
  const byName = new Map(params.map((p) => [p['name'] as string, p]));
  t.same([...byName.keys()], ['template', 'theme', ...TEXT_FIELDS], 'template, theme and every text field, nothing else');

  const templates = byName.get('template')!['schema']['enum'] as string[];
  for (const template of templates) t.same(ogIssues(minimalQuery(template as Template)), [], `template=${template} is drawn`);
  t.same(ogIssues({ ...minimalQuery('title'), template: 'other' }), ['template'], 'another template is refused');
  t.same(templates, [...TEMPLATES]);

  const theme = byName.get('theme')!['schema'];
  for (const value of theme['enum'] as string[]) t.same(ogIssues({ ...minimalQuery('title'), theme: value }), [], `theme=${value}`);
  t.same(ogIssues({ ...minimalQuery('title'), theme: 'sepia' }), ['theme'], 'another theme is refused');
  t.equal(parseOgQuery(new URLSearchParams(minimalQuery('title'))).theme, theme['default'], 'the default theme is the one drawn when none is given');

  for (const field of TEXT_FIELDS) {
    const p = byName.get(field)!;
    const template = TEMPLATES.find((x) => DRAWS[x].includes(field as TextField))!;
    const base = minimalQuery(template);
    const max = p['schema']['maxLength'] as number;
    t.same(ogIssues({ ...base, [field]: 'x'.repeat(max) }), [], `${field}: ${max} characters pass`);
    t.same(ogIssues({ ...base, [field]: 'x'.repeat(max + 1) }), [field], `${field}: ${max + 1} characters are refused`);
    t.equal(p['schema']['minLength'], 1);
    t.same(ogIssues({ ...base, [field]: ' ' }), [field], `${field}: nothing printable is refused`);
    const requiredEverywhere = TEMPLATES.every((x) => ogIssues(Object.fromEntries(Object.entries(minimalQuery(x)).filter(([k]) => k !== field))).includes(field));
    t.equal(p['required'], requiredEverywhere, `${field}: required exactly when every template refuses a query without it`);
  }
});

/** The error codes a body schema allows: its `error` const or enum, through references and `oneOf`. */
function codesOf(schema: Obj): string[] {
  const s = deref(schema);
  if (Array.isArray(s['oneOf'])) return (s['oneOf'] as Obj[]).flatMap(codesOf);
  const error = s['properties']?.['error'];
  if (error?.['type'] !== 'string') return [];
  return error['const'] !== undefined ? [error['const']] : error['enum'];
}

/** Codes answered to requests no operation describes: an unknown path (404), a wrong method (405), oversized headers (431). */
const OUTSIDE_OPERATIONS = new Set(['not_found', 'method_not_allowed', 'headers_too_large']);

/** Extra fields a catalogue answer carries (spec Part 7), to build each one. */
const EXTRAS: Partial<Record<ErrorCode, object>> = {
  url_rejected: { reason: 'private_address' },
  rate_limited: { limit: 60, windowSec: 60, retryAfterSec: 7 },
  quota_exceeded: { limit: 100, month: '2026-11', resetsAt: '2026-12-01T00:00:00.000Z' },
  concurrent_limit: { limit: 1 },
};

t.test('every error answer is the catalogue: its code, under its status, with its headers', async (t) => {
  const described = new Set<string>();
  for (const [operation, d] of Object.entries(OPERATIONS)) {
    const responses = doc['paths'][d.path][d.method.toLowerCase()]['responses'] as Obj;
    for (const [status, response] of Object.entries(responses)) {
      if (status === '200') continue;
      const codes = codesOf(deref(response)['content']['application/json']['schema']);
      if (codes.length === 0) {
        t.equal(Number(status), new ValidationFailure([]).answer().status, `${operation} ${status}: the validator report`);
        continue;
      }
      for (const code of codes) {
        described.add(code);
        t.ok(Object.hasOwn(ERROR_STATUS, code), `${operation}: ${code} is in the catalogue`);
        t.equal(Number(status), ERROR_STATUS[code as ErrorCode], `${operation}: ${code} under its status`);
        // The catalogue's own answer for the code conforms to what the document says of it.
        const answer = new ServiceError(code as ErrorCode, (EXTRAS[code as ErrorCode] ?? {}) as never).answer();
        const headers = { ...answer.headers, [RATELIMIT_LIMIT_HEADER]: '60', [RATELIMIT_REMAINING_HEADER]: '0' };
        t.same(checkAnswer({ method: d.method, path: d.path, status: answer.status, headers, body: Buffer.from(JSON.stringify(answer.body)) }), [],
          `${operation}: the catalogue's ${code} answer conforms`);
      }
    }
  }
  const catalogue = Object.keys(ERROR_STATUS);
  t.same(catalogue.filter((c) => !described.has(c) && !OUTSIDE_OPERATIONS.has(c)), [], 'every code an operation can answer is described');
  t.same([...OUTSIDE_OPERATIONS].filter((c) => described.has(c) || !catalogue.includes(c)), [], 'the codes left out are catalogue codes no operation describes');

  const reasons = deref(doc['components']['schemas']['UrlRejected'])['properties']['reason']['enum'];
  t.same([...reasons].sort(), [...REJECT_REASONS].sort(), 'every 422 reason of the catalogue');
  t.equal(doc['components']['headers']['WwwAuthenticate']['schema']['const'], new ServiceError('unauthorized').answer().headers['www-authenticate']);
  t.equal(doc['components']['responses']['Unavailable']['headers']['retry-after']['schema']['const'], new ServiceError('busy').answer().headers['retry-after']);
});
