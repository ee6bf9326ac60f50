/**
 * The OpenAPI 3.1.0 description of the service (spec Part 9 rule 2), written from the spec:
 * every operation, body, query parameter, header and error body of Parts 2, 4, 5 and 7.
 * Served at /openapi.json without a key; the e2e tests check every answer against it.
 */

type Schema = Record<string, unknown>;
const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });
const header = (name: string): Schema => ({ $ref: `#/components/headers/${name}` });
const response = (name: string): Schema => ({ $ref: `#/components/responses/${name}` });

const JSON_TYPE = 'application/json';
const WAIT_UNTIL = { type: 'string', enum: ['load', 'domcontentloaded', 'networkidle'], default: 'load', description: 'When the page counts as settled.' };
const dimension = (fallback: number): Schema => ({ type: 'integer', minimum: 1, maximum: 2000, default: fallback });
/** spec 4.3 rule 1: a string of digits is accepted for these fields. */
const coerced = (s: Schema, pattern: string): Schema => ({
  anyOf: [s, { type: 'string', pattern, description: 'A string of digits, taken as its number.' }],
  default: s['default'],
});

/** The rate-limit position carried by every answer that has one (spec 2.1). */
const position = { 'x-ratelimit-limit': header('RateLimitLimit'), 'x-ratelimit-remaining': header('RateLimitRemaining') };
const positionRequired = { 'x-ratelimit-limit': header('RateLimitLimitRequired'), 'x-ratelimit-remaining': header('RateLimitRemainingRequired') };

const errorBody = (code: string | string[], extra: Record<string, Schema> = {}, description?: string): Schema => ({
  type: 'object',
  ...(description === undefined ? {} : { description }),
  required: ['error', ...Object.keys(extra)],
  properties: {
    error: Array.isArray(code) ? { type: 'string', enum: code } : { type: 'string', const: code },
    ...extra,
  },
});

const renderHeaders = (blocked: 'always' | 'nonzero', cacheControl: string): Schema => ({
  'x-cache': header('XCache'),
  'x-render-blocked': {
    description: blocked === 'always'
      ? 'Sub-resource connections the guard refused during this render. Present on a live render (`x-cache: miss`), absent on a cache hit.'
      : 'Sub-resource connections the guard refused during this render. Present only on a live render whose count is not zero.',
    schema: { type: 'string', pattern: '^[0-9]+$' },
  },
  'cache-control': { description: `\`${cacheControl}\``, required: true, schema: { type: 'string', const: cacheControl } },
  ...positionRequired,
});

const renderErrors = (codes: number[]): Record<string, Schema> => {
  const all: Record<number, Schema> = {
    400: response('ValidationFailed'),
    401: response('Unauthorized'),
    408: response('RequestTimeout'),
    413: response('PayloadTooLarge'),
    422: response('UrlRejected'),
    429: response('TooManyRequests'),
    502: response('RenderFailed'),
    503: response('Unavailable'),
    504: response('RenderTimeout'),
  };
  return Object.fromEntries(codes.map((c) => [String(c), all[c]!]));
};

const binary = (type: string): Schema => ({ [type]: { schema: { type: 'string', contentMediaType: type } } });

const jsonBody = (schema: string, description: string): Schema => ({
  required: true,
  description: `${description} At most 4,194,304 bytes (413 above that, checked before the key).`,
  content: { [JSON_TYPE]: { schema: ref(schema) } },
});

const ogParam = (name: string, maxLength: number, description: string, required = false): Schema => ({
  name,
  in: 'query',
  required,
  description: `${description} At most ${maxLength} characters after cleaning (spec 4.5 rules 1 and 2).`,
  schema: { type: 'string', minLength: 1, maxLength },
});

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
          '401': response('Unauthorized'),
          '429': response('PingTooManyRequests'),
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
            headers: renderHeaders('always', 'no-store'),
            content: { ...binary('image/png'), ...binary('image/jpeg') },
          },
          ...renderErrors([400, 401, 408, 413, 422, 429, 502, 503, 504]),
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
            headers: renderHeaders('always', 'no-store'),
            content: binary('image/png'),
          },
          ...renderErrors([400, 401, 408, 413, 422, 429, 502, 503, 504]),
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
            headers: renderHeaders('nonzero', 'no-store'),
            content: binary('application/pdf'),
          },
          ...renderErrors([400, 401, 408, 413, 422, 429, 502, 503, 504]),
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
          { name: 'template', in: 'query', required: true, schema: { type: 'string', enum: ['title', 'stat', 'board'] } },
          { name: 'theme', in: 'query', required: false, schema: { type: 'string', enum: ['dark', 'light'], default: 'dark' } },
          ogParam('title', 120, 'Headline; drawn by all three templates.', true),
          ogParam('subtitle', 160, 'Drawn by `title` and `board`.'),
          ogParam('kicker', 40, 'Drawn by `title` and `stat`.'),
          ogParam('statValue', 6, 'The large figure; required with `template=stat`.'),
          ogParam('statLabel', 60, 'Under the figure; required with `template=stat`.'),
          ogParam('start', 12, 'Start cell; required with `template=board`.'),
          ogParam('target', 12, 'Target cell; required with `template=board`.'),
          ogParam('hint', 60, 'Line under the row; `board` only.'),
          ogParam('footer', 40, 'Left footer slot; all templates.'),
          ogParam('brand', 40, 'Right footer slot; all templates.'),
        ],
        responses: {
          '200': {
            description: 'The card, 1200x630.',
            headers: {
              'x-cache': header('XCache'),
              'cache-control': { required: true, schema: { type: 'string', const: 'private, max-age=86400' } },
              ...positionRequired,
            },
            content: binary('image/png'),
          },
          ...renderErrors([400, 401, 429, 502, 503, 504]),
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
      XCache: { required: true, description: '`hit` (served from the 24-hour cache, still metered) or `miss` (rendered for this call).', schema: { type: 'string', enum: ['hit', 'miss'] } },
      RetryAfter: { required: true, description: 'Seconds to wait.', schema: { type: 'string', pattern: '^[0-9]+$' } },
      WwwAuthenticate: { required: true, schema: { type: 'string', const: 'Bearer' } },
    },
    responses: {
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
        description: 'Request body over 4,194,304 bytes; checked before the key. Not metered.',
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
        headers: { 'retry-after': { description: '`1` on `busy`.', schema: { type: 'string', const: '1' } }, ...position },
        content: { [JSON_TYPE]: { schema: { oneOf: [ref('Busy'), ref('GuardUnverified')] } } },
      },
      RenderTimeout: {
        description: 'The page did not settle inside the time budget. Metered.',
        headers: position,
        content: { [JSON_TYPE]: { schema: ref('RenderTimeout') } },
      },
    },
    schemas: {
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
        reason: { type: 'string', enum: ['private_address', 'bad_scheme', 'credentials_in_url', 'bad_host', 'denied_host', 'dns_failure'] },
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
          url: { type: 'string', minLength: 1, maxLength: 2048, description: 'Absolute http(s) address on the public internet. A fragment (`#…`) is dropped: the page is loaded, and cached, without it.' },
          width: dimension(1280),
          height: dimension(800),
          fullPage: { type: 'boolean', default: false, description: 'The whole scroll height, clipped at 8000 px; the width stays `width`.' },
          deviceScaleFactor: { type: 'number', minimum: 1, maximum: 2, default: 1 },
          waitUntil: WAIT_UNTIL,
          omitBackground: { type: 'boolean', default: false },
          format: { type: 'string', enum: ['png', 'jpeg'], default: 'png' },
          quality: { type: 'integer', minimum: 1, maximum: 100, description: 'Only with `format: jpeg`; with `png` the request fails validation.' },
        },
        if: { required: ['quality'] },
        then: { required: ['format'], properties: { format: { const: 'jpeg' } } },
      },
      HtmlToImageRequest: {
        type: 'object',
        additionalProperties: false,
        required: ['html'],
        properties: {
          html: { type: 'string', minLength: 1, maxLength: 1_000_000, description: 'At most 1,000,000 UTF-16 code units. Written into a blank page with an opaque origin. Cached by its UTF-16 code units, so a lone surrogate is never taken for U+FFFD.' },
          width: coerced(dimension(1280), '^[0-9]+$'),
          height: coerced(dimension(800), '^[0-9]+$'),
          deviceScaleFactor: coerced({ type: 'number', minimum: 1, maximum: 2, default: 1 }, '^[0-9]+(\\.[0-9]+)?$'),
          omitBackground: { type: 'boolean', default: false, description: 'A real JSON boolean; the string form fails validation.' },
          waitUntil: WAIT_UNTIL,
        },
      },
      Margin: {
        type: 'object',
        additionalProperties: false,
        properties: Object.fromEntries(['top', 'right', 'bottom', 'left'].map((side) => [side, {
          type: 'string',
          pattern: '^[0-9]{1,3}(\\.[0-9]+)?(px|in|cm|mm)$',
          description: 'Up to three digits, an optional decimal part, then px, in, cm or mm.',
        }])),
      },
      PdfRequest: {
        type: 'object',
        additionalProperties: false,
        description: 'Exactly one of `url` and `html`.',
        oneOf: [{ required: ['url'] }, { required: ['html'] }],
        properties: {
          url: { type: 'string', minLength: 1, maxLength: 2048, description: 'Absolute http(s) address; exclusive with `html`. A fragment (`#…`) is dropped: the page is loaded, and cached, without it.' },
          html: { type: 'string', minLength: 1, maxLength: 1_000_000, description: 'Exclusive with `url`. Cached by its UTF-16 code units, so a lone surrogate is never taken for U+FFFD.' },
          format: { type: 'string', enum: ['Letter', 'Legal', 'Tabloid', 'Ledger', 'A0', 'A1', 'A2', 'A3', 'A4', 'A5', 'A6'], default: 'A4' },
          landscape: { type: 'boolean', default: false },
          printBackground: { type: 'boolean', default: true },
          scale: { type: 'number', minimum: 0.1, maximum: 2, default: 1 },
          margin: ref('Margin'),
          pageRanges: { type: 'string', maxLength: 40, pattern: '^[0-9, -]*$', description: 'Omitted: all pages.' },
          preferCSSPageSize: { type: 'boolean', default: false },
          media: { type: 'string', enum: ['print', 'screen'], default: 'print' },
          waitUntil: WAIT_UNTIL,
        },
      },
    },
  },
} as const;

/** The document as served at /openapi.json. */
export function openapiJson(): Buffer {
  return Buffer.from(JSON.stringify(openapiDocument));
}
