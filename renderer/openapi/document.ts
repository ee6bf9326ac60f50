/**
 * The OpenAPI 3.1.0 description of the service (spec Part 9 rule 2), written from the spec:
 * every operation, body, query parameter, header and error body of Parts 2, 4, 5 and 7.
 * Served at /openapi.json without a key; the e2e tests check every answer against it.
 *
 * Nothing in it is a copy: every bound, enum and default comes from the constants the request
 * schemas (renderer/schemas/, renderer/og/fields.ts) validate with, every error code and its
 * status from the catalogue (lib/errors.ts), every header name from the contract that sets it,
 * so the document cannot drift from the code (test/renderer/openapi.test.ts holds it to them).
 */
import { ERROR_STATUS, REJECT_REASONS, ServiceError, ValidationFailure, type ErrorCode } from '../../lib/errors.ts';
import { CACHE_OUTCOMES, MAX_BODY_BYTES, RATELIMIT_LIMIT_HEADER, RATELIMIT_REMAINING_HEADER } from '../../lib/policy-contract.ts';
import { CEILINGS, REQUIRES, TEMPLATES, TEXT_FIELDS, THEMES, THEME_DEFAULT, type TextField } from '../og/fields.ts';
import {
  DIGITS,
  DIMENSION_MAX,
  DIMENSION_MIN,
  FULL_PAGE_MAX_HEIGHT,
  HTML_MAX,
  HTML_MIN,
  SCALE_MAX,
  SCALE_MIN,
  URL_MAX,
  URL_MIN,
  WAIT_UNTIL,
  WAIT_UNTIL_DEFAULT,
} from '../schemas/fields.ts';
import { HTML_TO_IMAGE_DEFAULTS } from '../schemas/html-to-image.ts';
import {
  MARGIN_LENGTH,
  MARGIN_SIDES,
  MEDIA,
  PAGE_RANGES,
  PAGE_RANGES_MAX,
  PDF_DEFAULTS,
  PDF_FORMATS,
  PDF_SCALE_MAX,
  PDF_SCALE_MIN,
} from '../schemas/pdf.ts';
import { IMAGE_FORMATS, QUALITY_MAX, QUALITY_MIN, SCREENSHOT_DEFAULTS } from '../schemas/screenshot.ts';
import { BLOCKED_HEADER, CACHE_HEADER, OG_CACHE_CONTROL, RENDER_CACHE_CONTROL } from '../server/answer-headers.ts';

type Schema = Record<string, unknown>;
const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });
const header = (name: string): Schema => ({ $ref: `#/components/headers/${name}` });
const response = (name: string): Schema => ({ $ref: `#/components/responses/${name}` });

/** 4194304 as the spec writes it: 4,194,304. */
const grouped = (n: number): string => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');

const JSON_TYPE = 'application/json';
const WAIT_UNTIL_SCHEMA = { type: 'string', enum: WAIT_UNTIL, default: WAIT_UNTIL_DEFAULT, description: 'When the page counts as settled.' };
const dimension = (fallback: number): Schema => ({ type: 'integer', minimum: DIMENSION_MIN, maximum: DIMENSION_MAX, default: fallback });
const scaleFactor = (fallback: number): Schema => ({ type: 'number', minimum: SCALE_MIN, maximum: SCALE_MAX, default: fallback });
/** spec 4.3 rule 1: a string of digits is accepted for these fields. */
const coerced = (s: Schema, pattern: string): Schema => ({
  anyOf: [s, { type: 'string', pattern, description: 'A string of digits, taken as its number.' }],
  default: s['default'],
});
const pageUrl = (description: string): Schema => ({ type: 'string', minLength: URL_MIN, maxLength: URL_MAX, description });
const markup = (description: string): Schema => ({ type: 'string', minLength: HTML_MIN, maxLength: HTML_MAX, description });

/** The rate-limit position carried by every answer that has one (spec 2.1). */
const position = { [RATELIMIT_LIMIT_HEADER]: header('RateLimitLimit'), [RATELIMIT_REMAINING_HEADER]: header('RateLimitRemaining') };
const positionRequired = { [RATELIMIT_LIMIT_HEADER]: header('RateLimitLimitRequired'), [RATELIMIT_REMAINING_HEADER]: header('RateLimitRemainingRequired') };

/** The headers the catalogue's answer for `code` carries (lib/errors.ts). */
const answerHeader = (code: ErrorCode, name: string): string => new ServiceError(code).answer().headers[name]!;

const errorBody = (code: ErrorCode | ErrorCode[], extra: Record<string, Schema> = {}, description?: string): Schema => ({
  type: 'object',
  ...(description === undefined ? {} : { description }),
  required: ['error', ...Object.keys(extra)],
  properties: {
    error: Array.isArray(code) ? { type: 'string', enum: code } : { type: 'string', const: code },
    ...extra,
  },
});

const renderHeaders = (blocked: 'always' | 'nonzero', cacheControl: string): Schema => ({
  [CACHE_HEADER]: header('XCache'),
  [BLOCKED_HEADER]: {
    description: blocked === 'always'
      ? `Sub-resource connections the guard refused during this render. Present on a live render (\`${CACHE_HEADER}: miss\`), absent on a cache hit.`
      : 'Sub-resource connections the guard refused during this render. Present only on a live render whose count is not zero.',
    schema: { type: 'string', pattern: '^[0-9]+$' },
  },
  'cache-control': { description: `\`${cacheControl}\``, required: true, schema: { type: 'string', const: cacheControl } },
  ...positionRequired,
});

const binary = (type: string): Schema => ({ [type]: { schema: { type: 'string', contentMediaType: type } } });

const jsonBody = (schema: string, description: string): Schema => ({
  required: true,
  description: `${description} At most ${grouped(MAX_BODY_BYTES)} bytes (413 above that, checked before the key).`,
  content: { [JSON_TYPE]: { schema: ref(schema) } },
});

/** What each OG text field is (spec 4.5 table); which template draws or requires it is said where it matters. */
const OG_FIELD_DESCRIPTIONS: Readonly<Record<TextField, string>> = {
  title: 'Headline; drawn by all three templates.',
  subtitle: 'Drawn by `title` and `board`.',
  kicker: 'Drawn by `title` and `stat`.',
  statValue: 'The large figure; required with `template=stat`.',
  statLabel: 'Under the figure; required with `template=stat`.',
  start: 'Start cell; required with `template=board`.',
  target: 'Target cell; required with `template=board`.',
  hint: 'Line under the row; `board` only.',
  footer: 'Left footer slot; all templates.',
  brand: 'Right footer slot; all templates.',
};

/** An OG text parameter: required only when every template requires it. */
const ogParam = (name: TextField): Schema => ({
  name,
  in: 'query',
  required: TEMPLATES.every((t) => REQUIRES[t].includes(name)),
  description: `${OG_FIELD_DESCRIPTIONS[name]} At most ${CEILINGS[name]} characters after cleaning (spec 4.5 rules 1 and 2).`,
  schema: { type: 'string', minLength: 1, maxLength: CEILINGS[name] },
});

/** The bodies: the ping, the validator report, the error bodies of the catalogue, the requests. */
const SCHEMAS = {
  Ping: {
    type: 'object',
    required: ['pong', 'app', 'version'],
    properties: { pong: { type: 'boolean', const: true }, app: { type: 'string' }, version: { type: 'string' } },
  },
  ValidationReport: {
    type: 'object',
    description: 'The validator report: `error.message` names every failing field by path.',
    required: ['success', 'error'],
    properties: {
      success: { type: 'boolean', const: false },
      error: {
        type: 'object',
        required: ['message'],
        properties: {
          name: { type: 'string' },
          message: { type: 'string', minLength: 1 },
          issues: {
            type: 'array',
            items: { type: 'object', required: ['path', 'message'], properties: { path: { type: 'string' }, message: { type: 'string' } } },
          },
        },
      },
    },
  },
  Unauthorized: errorBody('unauthorized'),
  RequestTimeout: errorBody('request_timeout'),
  PayloadTooLarge: errorBody('payload_too_large'),
  UrlRejected: errorBody('url_rejected', {
    reason: {
      type: 'string',
      enum: REJECT_REASONS,
      description: 'The spec\'s reasons, and one extension: `not_allowed_for_key`, when the API key has an egress policy in ' +
        'enforce mode and the page address (or a redirect hop of it) is outside the key\'s list of hosts. It is given only ' +
        'for an address the spec\'s own rules pass.',
    },
  }),
  RateLimited: errorBody('rate_limited', {
    limit: { type: 'integer', minimum: 1 },
    windowSec: { type: 'integer', minimum: 1 },
    retryAfterSec: { type: 'integer', minimum: 0 },
  }, 'Per-key burst window full; wait `retryAfterSec` (also the `retry-after` header).'),
  QuotaExceeded: errorBody('quota_exceeded', {
    limit: { type: 'integer', minimum: 0 },
    month: { type: 'string', pattern: '^[0-9]{4}-[0-9]{2}$', description: 'The UTC calendar month, `YYYY-MM`.' },
    resetsAt: { type: 'string', format: 'date-time', description: 'Start of the next UTC month.' },
  }, 'Monthly quota spent.'),
  ConcurrentLimit: errorBody('concurrent_limit', { limit: { type: 'integer', minimum: 1 } }, 'The key already has its allowed renders in flight.'),
  RenderFailed: errorBody(['render_failed', 'render_too_large']),
  Busy: errorBody('busy'),
  GuardUnverified: errorBody('guard_unverified'),
  RenderTimeout: errorBody('render_timeout'),
  ScreenshotRequest: {
    type: 'object',
    additionalProperties: false,
    required: ['url'],
    properties: {
      url: pageUrl('Absolute http(s) address on the public internet. A fragment (`#…`) is dropped: the page is loaded, and cached, without it.'),
      width: dimension(SCREENSHOT_DEFAULTS.width),
      height: dimension(SCREENSHOT_DEFAULTS.height),
      fullPage: { type: 'boolean', default: SCREENSHOT_DEFAULTS.fullPage, description: `The whole scroll height, clipped at ${FULL_PAGE_MAX_HEIGHT} px; the width stays \`width\`.` },
      deviceScaleFactor: scaleFactor(SCREENSHOT_DEFAULTS.deviceScaleFactor),
      waitUntil: WAIT_UNTIL_SCHEMA,
      omitBackground: { type: 'boolean', default: SCREENSHOT_DEFAULTS.omitBackground },
      format: { type: 'string', enum: IMAGE_FORMATS, default: SCREENSHOT_DEFAULTS.format },
      quality: { type: 'integer', minimum: QUALITY_MIN, maximum: QUALITY_MAX, description: 'Only with `format: jpeg`; with `png` the request fails validation.' },
    },
    if: { required: ['quality'] },
    then: { required: ['format'], properties: { format: { const: 'jpeg' } } },
  },
  HtmlToImageRequest: {
    type: 'object',
    additionalProperties: false,
    required: ['html'],
    properties: {
      html: markup(`At most ${grouped(HTML_MAX)} UTF-16 code units. Written into a blank page with an opaque origin. Cached by its UTF-16 code units, so a lone surrogate is never taken for U+FFFD.`),
      width: coerced(dimension(HTML_TO_IMAGE_DEFAULTS.width), '^[0-9]+$'),
      height: coerced(dimension(HTML_TO_IMAGE_DEFAULTS.height), '^[0-9]+$'),
      deviceScaleFactor: coerced(scaleFactor(HTML_TO_IMAGE_DEFAULTS.deviceScaleFactor), DIGITS.source),
      omitBackground: { type: 'boolean', default: HTML_TO_IMAGE_DEFAULTS.omitBackground, description: 'A real JSON boolean; the string form fails validation.' },
      waitUntil: WAIT_UNTIL_SCHEMA,
    },
  },
  Margin: {
    type: 'object',
    additionalProperties: false,
    properties: Object.fromEntries(MARGIN_SIDES.map((side) => [side, {
      type: 'string',
      pattern: MARGIN_LENGTH.source,
      description: 'Up to three digits, an optional decimal part, then px, in, cm or mm.',
    }])),
  },
  PdfRequest: {
    type: 'object',
    additionalProperties: false,
    description: 'Exactly one of `url` and `html`.',
    oneOf: [{ required: ['url'] }, { required: ['html'] }],
    properties: {
      url: pageUrl('Absolute http(s) address; exclusive with `html`. A fragment (`#…`) is dropped: the page is loaded, and cached, without it.'),
      html: markup('Exclusive with `url`. Cached by its UTF-16 code units, so a lone surrogate is never taken for U+FFFD.'),
      format: { type: 'string', enum: PDF_FORMATS, default: PDF_DEFAULTS.format },
      landscape: { type: 'boolean', default: PDF_DEFAULTS.landscape },
      printBackground: { type: 'boolean', default: PDF_DEFAULTS.printBackground },
      scale: { type: 'number', minimum: PDF_SCALE_MIN, maximum: PDF_SCALE_MAX, default: PDF_DEFAULTS.scale },
      margin: ref('Margin'),
      pageRanges: { type: 'string', maxLength: PAGE_RANGES_MAX, pattern: PAGE_RANGES.source, description: 'Omitted: all pages.' },
      preferCSSPageSize: { type: 'boolean', default: PDF_DEFAULTS.preferCSSPageSize },
      media: { type: 'string', enum: MEDIA, default: PDF_DEFAULTS.media },
      waitUntil: WAIT_UNTIL_SCHEMA,
    },
  },
};

/** The error answers, by name; each one's status comes from the codes its body allows (statusOf). */
const RESPONSES = {
  ValidationFailed: {
    description: 'The body or query failed validation. Nothing rendered, nothing charged.',
    headers: position,
    content: { [JSON_TYPE]: { schema: ref('ValidationReport') } },
  },
  Unauthorized: {
    description: 'Key missing, malformed, unknown or revoked (one answer for all four). Not metered.',
    headers: { 'www-authenticate': header('WwwAuthenticate'), ...position },
    content: { [JSON_TYPE]: { schema: ref('Unauthorized') } },
  },
  RequestTimeout: {
    description: 'The request headers did not arrive within 10 seconds, or the body within 60 seconds of them; the connection is closed. Checked before the key. Not metered.',
    content: { [JSON_TYPE]: { schema: ref('RequestTimeout') } },
  },
  PayloadTooLarge: {
    description: `Request body over ${grouped(MAX_BODY_BYTES)} bytes; checked before the key. Not metered.`,
    content: { [JSON_TYPE]: { schema: ref('PayloadTooLarge') } },
  },
  UrlRejected: {
    description: 'The guard refused the page address or its document (a redirect hop included), or, for markup, a refused sub-resource made the render fail.',
    headers: position,
    content: { [JSON_TYPE]: { schema: ref('UrlRejected') } },
  },
  TooManyRequests: {
    description: 'Burst window full, monthly quota spent, or the key already has its renders in flight. Not metered.',
    headers: { 'retry-after': { description: 'Seconds to wait; on `rate_limited` only.', schema: { type: 'string', pattern: '^[0-9]+$' } }, ...positionRequired },
    content: { [JSON_TYPE]: { schema: { oneOf: [ref('RateLimited'), ref('QuotaExceeded'), ref('ConcurrentLimit')] } } },
  },
  PingTooManyRequests: {
    description: 'Burst window full or monthly quota spent. Not metered.',
    headers: { 'retry-after': { description: 'Seconds to wait; on `rate_limited` only.', schema: { type: 'string', pattern: '^[0-9]+$' } }, ...positionRequired },
    content: { [JSON_TYPE]: { schema: { oneOf: [ref('RateLimited'), ref('QuotaExceeded')] } } },
  },
  RenderFailed: {
    description: 'The target answered but the page could not be rendered, or the output passed the maximum render size. Metered.',
    headers: position,
    content: { [JSON_TYPE]: { schema: ref('RenderFailed') } },
  },
  Unavailable: {
    description: 'Every render slot is taken, or the service holds as many request bodies not yet authorized as it may (`busy`, retry after 1 second; the latter before the key is checked), or the start-up guard self-test has not passed. Not metered.',
    headers: { 'retry-after': { description: `\`${answerHeader('busy', 'retry-after')}\` on \`busy\`.`, schema: { type: 'string', const: answerHeader('busy', 'retry-after') } }, ...position },
    content: { [JSON_TYPE]: { schema: { oneOf: [ref('Busy'), ref('GuardUnverified')] } } },
  },
  RenderTimeout: {
    description: 'The page did not settle inside the time budget. Metered.',
    headers: position,
    content: { [JSON_TYPE]: { schema: ref('RenderTimeout') } },
  },
};

/** The error codes a body schema allows: its `error` const or enum, through references and `oneOf`. */
function codesOf(schema: Schema): ErrorCode[] {
  if (typeof schema['$ref'] === 'string') {
    const name = (schema['$ref'] as string).replace('#/components/schemas/', '') as keyof typeof SCHEMAS;
    return codesOf(SCHEMAS[name] as Schema);
  }
  if (Array.isArray(schema['oneOf'])) return (schema['oneOf'] as Schema[]).flatMap(codesOf);
  const error = (schema['properties'] as Record<string, Schema> | undefined)?.['error'];
  if (error === undefined || error['type'] !== 'string') return [];
  return (error['const'] !== undefined ? [error['const']] : (error['enum'] as unknown[])) as ErrorCode[];
}

/**
 * The status an error answer is described under: the validator report's for a body with no
 * code, otherwise the one status the catalogue gives all its codes (a mix is a mistake).
 */
function statusOf(name: keyof typeof RESPONSES): string {
  const codes = codesOf(RESPONSES[name].content[JSON_TYPE].schema);
  if (codes.length === 0) return String(new ValidationFailure([]).status);
  const statuses = new Set(codes.map((c) => ERROR_STATUS[c]));
  if (statuses.size !== 1) throw new Error(`the ${name} answer mixes statuses ${[...statuses].join(', ')}`);
  return String([...statuses][0]);
}

/** The responses of an operation for the named error answers, each under its status. */
const errors = (...names: Array<keyof typeof RESPONSES>): Record<string, Schema> =>
  Object.fromEntries(names.map((n) => [statusOf(n), response(n)]));

/** The error answers of screenshot, html-to-image and pdf (spec 4.2 to 4.4); og reads no body, so no 408 or 413. */
const RENDER_ERRORS = [
  'ValidationFailed', 'Unauthorized', 'RequestTimeout', 'PayloadTooLarge', 'UrlRejected', 'TooManyRequests', 'RenderFailed', 'Unavailable', 'RenderTimeout',
] as const;
const OG_ERRORS = ['ValidationFailed', 'Unauthorized', 'TooManyRequests', 'RenderFailed', 'Unavailable', 'RenderTimeout'] as const;

export const openapiDocument = {
  openapi: '3.1.0',
  info: {
    title: 'tintype',
    version: '1.0.0',
    summary: 'Screenshots, HTML to PNG, PDF and Open Graph cards, metered per API key.',
    description:
      'Every `/v1` operation needs `authorization: Bearer <API_KEY>`. Branch on the `error` field of an ' +
      'error body, not on the status alone: several codes share a status. 401, 408, 413 and every 429 and 503 are ' +
      'not metered; 200, 502 and 504 are; 400 is not; a cache hit is one call.',
  },
  servers: [{ url: '/' }],
  security: [{ bearerKey: [] }],
  paths: {
    '/v1/ping': {
      get: {
        operationId: 'ping',
        summary: 'Liveness ping; one metered call.',
        responses: {
          '200': {
            description: 'The service answers.',
            headers: positionRequired,
            content: { [JSON_TYPE]: { schema: ref('Ping') } },
          },
          ...errors('Unauthorized', 'PingTooManyRequests'),
        },
      },
    },
    '/v1/screenshot': {
      post: {
        operationId: 'screenshot',
        summary: 'Screenshot of a public URL (PNG or JPEG).',
        requestBody: jsonBody('ScreenshotRequest', 'The page and how to capture it.'),
        responses: {
          '200': {
            description: 'The image.',
            headers: renderHeaders('always', RENDER_CACHE_CONTROL),
            content: { ...binary('image/png'), ...binary('image/jpeg') },
          },
          ...errors(...RENDER_ERRORS),
        },
      },
    },
    '/v1/html-to-image': {
      post: {
        operationId: 'htmlToImage',
        summary: 'An HTML document rendered to a PNG.',
        requestBody: jsonBody('HtmlToImageRequest', 'The markup and the viewport.'),
        responses: {
          '200': {
            description: 'The PNG, (width x deviceScaleFactor) by (height x deviceScaleFactor) pixels.',
            headers: renderHeaders('always', RENDER_CACHE_CONTROL),
            content: binary('image/png'),
          },
          ...errors(...RENDER_ERRORS),
        },
      },
    },
    '/v1/pdf': {
      post: {
        operationId: 'pdf',
        summary: 'A URL or an HTML document rendered to a PDF.',
        requestBody: jsonBody('PdfRequest', 'Exactly one of `url` and `html`, and the page set-up.'),
        responses: {
          '200': {
            description: 'The PDF.',
            headers: renderHeaders('nonzero', RENDER_CACHE_CONTROL),
            content: binary('application/pdf'),
          },
          ...errors(...RENDER_ERRORS),
        },
      },
    },
    '/v1/og': {
      get: {
        operationId: 'og',
        summary: 'A 1200x630 Open Graph PNG drawn from a built-in template.',
        description:
          'Every value is drawn as plain text; no network request is made. A field the template does not draw is ' +
          'a 400 (`template=<name> does not draw <field>`), so is a missing required one (`template=<name> requires ' +
          '<field>`). The query string is written to the access log: put nothing confidential in it.',
        parameters: [
          { name: 'template', in: 'query', required: true, schema: { type: 'string', enum: TEMPLATES } },
          { name: 'theme', in: 'query', required: false, schema: { type: 'string', enum: THEMES, default: THEME_DEFAULT } },
          ...TEXT_FIELDS.map(ogParam),
        ],
        responses: {
          '200': {
            description: 'The card, 1200x630.',
            headers: {
              [CACHE_HEADER]: header('XCache'),
              'cache-control': { required: true, schema: { type: 'string', const: OG_CACHE_CONTROL } },
              ...positionRequired,
            },
            content: binary('image/png'),
          },
          ...errors(...OG_ERRORS),
        },
      },
    },
  },
  components: {
    securitySchemes: {
      bearerKey: {
        type: 'http',
        scheme: 'bearer',
        description: 'The API key, a secret starting `sk_`. Never accepted in a query string.',
      },
    },
    headers: {
      RateLimitLimit: { description: 'Requests allowed in the current burst window.', schema: { type: 'string', pattern: '^[0-9]+$' } },
      RateLimitRemaining: { description: 'Requests left in the current burst window.', schema: { type: 'string', pattern: '^[0-9]+$' } },
      RateLimitLimitRequired: { required: true, description: 'Requests allowed in the current burst window.', schema: { type: 'string', pattern: '^[0-9]+$' } },
      RateLimitRemainingRequired: { required: true, description: 'Requests left in the current burst window.', schema: { type: 'string', pattern: '^[0-9]+$' } },
      XCache: { required: true, description: '`hit` (served from the 24-hour cache, still metered) or `miss` (rendered for this call).', schema: { type: 'string', enum: CACHE_OUTCOMES } },
      RetryAfter: { required: true, description: 'Seconds to wait.', schema: { type: 'string', pattern: '^[0-9]+$' } },
      WwwAuthenticate: { required: true, schema: { type: 'string', const: answerHeader('unauthorized', 'www-authenticate') } },
    },
    responses: RESPONSES,
    schemas: SCHEMAS,
  },
} as const;

/** The document as served at /openapi.json. */
export function openapiJson(): Buffer {
  return Buffer.from(JSON.stringify(openapiDocument));
}
