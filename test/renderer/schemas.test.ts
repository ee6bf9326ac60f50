import t, { type Test } from 'tap';
import { ValidationFailure, type FieldIssue } from '../../lib/errors.ts';
import {
  MAX_BITMAP_PIXELS,
  checkBitmap,
  parseHtmlToImage,
  parsePdf,
  parseScreenshot,
} from '../../renderer/schemas/index.ts';

type Parse = (body: unknown) => Promise<unknown>;

/** The issues a body fails with, or [] when it passes. */
async function issuesOf(parse: Parse, body: unknown): Promise<FieldIssue[]> {
  try {
    await parse(body);
    return [];
  } catch (err) {
    if (err instanceof ValidationFailure) return [...err.issues];
    throw err;
  }
}

interface Row {
  name: string;
  body: Record<string, unknown>;
  /** Expected failing paths (exactly these), or [] for a body that passes. */
  fails: string[];
  /** A fragment the message of the first failing path must contain. */
  message?: string;
}

async function table(t: Test, parse: Parse, rows: Row[]): Promise<void> {
  for (const row of rows) {
    const issues = await issuesOf(parse, row.body);
    t.same([...new Set(issues.map((i) => i.path))].sort(), [...row.fails].sort(), row.name);
    if (row.message !== undefined) {
      t.match(issues[0]?.message ?? '', row.message, `${row.name}: message`);
    }
  }
}

const A = 'https://example.com/';

t.test('screenshot: types, ranges and boundary rows (spec 4.2)', async (t) => {
  await table(t, parseScreenshot, [
    { name: 'minimal body', body: { url: A }, fails: [] },
    { name: 'url missing', body: {}, fails: ['url'], message: 'url is required' },
    { name: 'url empty', body: { url: '' }, fails: ['url'] },
    { name: 'url 2047 chars', body: { url: A + 'a'.repeat(2047 - A.length) }, fails: [] },
    { name: 'url 2048 chars', body: { url: A + 'a'.repeat(2048 - A.length) }, fails: [] },
    { name: 'url 2049 chars', body: { url: A + 'a'.repeat(2049 - A.length) }, fails: ['url'], message: 'at most 2048' },
    { name: 'url not absolute', body: { url: '/relative' }, fails: ['url'], message: 'absolute URL' },
    { name: 'url a number', body: { url: 12 }, fails: ['url'], message: 'must be a string' },
    // Scheme, credentials and host are the guard's to judge (422), not the validator's.
    { name: 'file scheme passes to the guard', body: { url: 'file:///etc/passwd' }, fails: [] },
    { name: 'credentials pass to the guard', body: { url: 'http://u:p@example.com/' }, fails: [] },
    { name: 'IP literal passes to the guard', body: { url: 'http://10.0.0.1/' }, fails: [] },
    { name: 'dotless host passes to the guard', body: { url: 'http://intranet/' }, fails: [] },
    { name: 'width 0', body: { url: A, width: 0 }, fails: ['width'], message: 'at least 1' },
    { name: 'width 1', body: { url: A, width: 1 }, fails: [] },
    { name: 'width 1999', body: { url: A, width: 1999 }, fails: [] },
    { name: 'width 2000', body: { url: A, width: 2000 }, fails: [] },
    { name: 'width 2001', body: { url: A, width: 2001 }, fails: ['width'], message: 'at most 2000' },
    { name: 'width fraction', body: { url: A, width: 10.5 }, fails: ['width'], message: 'whole number' },
    { name: 'width string refused', body: { url: A, width: '800' }, fails: ['width'], message: 'must be a number' },
    { name: 'height 0', body: { url: A, height: 0 }, fails: ['height'] },
    { name: 'height 2000', body: { url: A, height: 2000 }, fails: [] },
    { name: 'height 2001', body: { url: A, height: 2001 }, fails: ['height'] },
    { name: 'scale 0.99', body: { url: A, deviceScaleFactor: 0.99 }, fails: ['deviceScaleFactor'] },
    { name: 'scale 1', body: { url: A, deviceScaleFactor: 1 }, fails: [] },
    { name: 'scale 1.5', body: { url: A, deviceScaleFactor: 1.5 }, fails: [] },
    { name: 'scale 2', body: { url: A, deviceScaleFactor: 2 }, fails: [] },
    { name: 'scale 2.01', body: { url: A, deviceScaleFactor: 2.01 }, fails: ['deviceScaleFactor'] },
    { name: 'fullPage string refused', body: { url: A, fullPage: 'true' }, fails: ['fullPage'], message: 'boolean' },
    { name: 'waitUntil networkidle', body: { url: A, waitUntil: 'networkidle' }, fails: [] },
    { name: 'waitUntil networkidle0 refused', body: { url: A, waitUntil: 'networkidle0' }, fails: ['waitUntil'] },
    { name: 'omitBackground string refused', body: { url: A, omitBackground: 'false' }, fails: ['omitBackground'] },
    { name: 'format webp refused', body: { url: A, format: 'webp' }, fails: ['format'], message: 'png, jpeg' },
    { name: 'quality with png', body: { url: A, quality: 80 }, fails: ['quality'], message: 'quality applies to jpeg only' },
    { name: 'quality with explicit png', body: { url: A, format: 'png', quality: 80 }, fails: ['quality'], message: 'quality applies to jpeg only' },
    { name: 'quality 0 with jpeg', body: { url: A, format: 'jpeg', quality: 0 }, fails: ['quality'] },
    { name: 'quality 1 with jpeg', body: { url: A, format: 'jpeg', quality: 1 }, fails: [] },
    { name: 'quality 100 with jpeg', body: { url: A, format: 'jpeg', quality: 100 }, fails: [] },
    { name: 'quality 101 with jpeg', body: { url: A, format: 'jpeg', quality: 101 }, fails: ['quality'] },
    { name: 'unknown field refused, not dropped', body: { url: A, colour: 'red' }, fails: ['colour'], message: 'not a known field' },
    { name: 'every failing field named', body: { width: 0, height: 9999, quality: 3, x: 1 }, fails: ['url', 'width', 'height', 'quality', 'x'] },
  ]);
});

t.test('screenshot: defaults applied (spec 4.2)', async (t) => {
  t.same(await parseScreenshot({ url: A }), {
    url: A, width: 1280, height: 800, fullPage: false, deviceScaleFactor: 1, waitUntil: 'load',
    omitBackground: false, format: 'png',
  });
});

t.test('html-to-image: coercion of digit strings, real booleans (spec 4.3)', async (t) => {
  const H = '<p>hi</p>';
  await table(t, parseHtmlToImage, [
    { name: 'minimal body', body: { html: H }, fails: [] },
    { name: 'html missing', body: {}, fails: ['html'] },
    { name: 'html empty', body: { html: '' }, fails: ['html'] },
    { name: 'html 999,999 units', body: { html: 'a'.repeat(999_999) }, fails: [] },
    { name: 'html 1,000,000 units', body: { html: 'a'.repeat(1_000_000) }, fails: [] },
    { name: 'html 1,000,001 units', body: { html: 'a'.repeat(1_000_001) }, fails: ['html'], message: 'at most 1000000' },
    // U+20AC is one UTF-16 unit but three UTF-8 bytes: the cap counts units (Part 8 rule 1).
    { name: 'html 1,000,000 three-byte characters', body: { html: '€'.repeat(1_000_000) }, fails: [] },
    // U+1F600 is two UTF-16 units.
    { name: 'html 500,001 astral characters', body: { html: '😀'.repeat(500_001) }, fails: ['html'] },
    { name: 'url field is not accepted', body: { html: H, url: A }, fails: ['url'], message: 'not a known field' },
    { name: 'width digit string', body: { html: H, width: '640' }, fails: [] },
    { name: 'width "2001"', body: { html: H, width: '2001' }, fails: ['width'] },
    { name: 'width "abc"', body: { html: H, width: 'abc' }, fails: ['width'] },
    { name: 'width "1e3" not digits', body: { html: H, width: '1e3' }, fails: ['width'] },
    { name: 'height "0"', body: { html: H, height: '0' }, fails: ['height'] },
    { name: 'scale "1.5"', body: { html: H, deviceScaleFactor: '1.5' }, fails: [] },
    { name: 'scale "2.5"', body: { html: H, deviceScaleFactor: '2.5' }, fails: ['deviceScaleFactor'] },
    { name: 'omitBackground "true" refused', body: { html: H, omitBackground: 'true' }, fails: ['omitBackground'], message: 'boolean' },
    { name: 'omitBackground true', body: { html: H, omitBackground: true }, fails: [] },
    { name: 'fullPage is not an option here', body: { html: H, fullPage: true }, fails: ['fullPage'] },
  ]);
  const req = await parseHtmlToImage({ html: H, width: '640', height: '10', deviceScaleFactor: '1.5' });
  t.same(req, { html: H, width: 640, height: 10, deviceScaleFactor: 1.5, omitBackground: false, waitUntil: 'load' });
});

t.test('pdf: exactly one of url or html, margins, page ranges (spec 4.4)', async (t) => {
  const H = '<p>hi</p>';
  await table(t, parsePdf, [
    { name: 'url form', body: { url: A }, fails: [] },
    { name: 'html form', body: { html: H }, fails: [] },
    { name: 'neither', body: {}, fails: ['url'], message: 'give exactly one of `url` or `html`' },
    { name: 'both', body: { url: A, html: H }, fails: ['url'], message: 'give exactly one of `url` or `html`' },
    { name: 'file scheme passes to the guard', body: { url: 'file:///etc/passwd' }, fails: [] },
    { name: 'each format', body: { html: H, format: 'Tabloid' }, fails: [] },
    { name: 'format lower case refused', body: { html: H, format: 'a4' }, fails: ['format'] },
    { name: 'format A7 refused', body: { html: H, format: 'A7' }, fails: ['format'] },
    { name: 'landscape string refused', body: { html: H, landscape: 'yes' }, fails: ['landscape'] },
    { name: 'printBackground false', body: { html: H, printBackground: false }, fails: [] },
    { name: 'scale 0.09', body: { html: H, scale: 0.09 }, fails: ['scale'] },
    { name: 'scale 0.1', body: { html: H, scale: 0.1 }, fails: [] },
    { name: 'scale 2', body: { html: H, scale: 2 }, fails: [] },
    { name: 'scale 2.01', body: { html: H, scale: 2.01 }, fails: ['scale'] },
    { name: 'scale "1" refused', body: { html: H, scale: '1' }, fails: ['scale'] },
    { name: 'margins all units', body: { html: H, margin: { top: '10px', right: '1in', bottom: '2.54cm', left: '999.5mm' } }, fails: [] },
    { name: 'margin four digits', body: { html: H, margin: { top: '1000px' } }, fails: ['margin.top'] },
    { name: 'margin bare number', body: { html: H, margin: { top: '10' } }, fails: ['margin.top'] },
    { name: 'margin numeric value', body: { html: H, margin: { top: 10 } }, fails: ['margin.top'] },
    { name: 'margin em', body: { html: H, margin: { left: '1em' } }, fails: ['margin.left'] },
    { name: 'margin expression', body: { html: H, margin: { right: 'calc(1px + 2px)' } }, fails: ['margin.right'] },
    { name: 'margin negative', body: { html: H, margin: { bottom: '-1px' } }, fails: ['margin.bottom'] },
    { name: 'margin unknown key', body: { html: H, margin: { middle: '1px' } }, fails: ['margin.middle'] },
    { name: 'margin not an object', body: { html: H, margin: '1px' }, fails: ['margin'] },
    { name: 'pageRanges ok', body: { html: H, pageRanges: '1-3, 5,7' }, fails: [] },
    { name: 'pageRanges letter', body: { html: H, pageRanges: '1-a' }, fails: ['pageRanges'] },
    { name: 'pageRanges 39 chars', body: { html: H, pageRanges: '1,'.repeat(19) + '1' }, fails: [] },
    { name: 'pageRanges 40 chars', body: { html: H, pageRanges: '1,'.repeat(19) + '11' }, fails: [] },
    { name: 'pageRanges 41 chars', body: { html: H, pageRanges: '1,'.repeat(20) + '1' }, fails: ['pageRanges'] },
    { name: 'media screen', body: { html: H, media: 'screen' }, fails: [] },
    { name: 'media tv refused', body: { html: H, media: 'tv' }, fails: ['media'] },
    { name: 'waitUntil bad', body: { html: H, waitUntil: 'idle' }, fails: ['waitUntil'] },
    { name: 'unknown field', body: { html: H, width: 100 }, fails: ['width'] },
  ]);
  t.same(await parsePdf({ html: H }), {
    html: H, format: 'A4', landscape: false, printBackground: true, scale: 1, preferCSSPageSize: false,
    media: 'print', waitUntil: 'load',
  });
});

t.test('a body that is not a JSON object is refused', async (t) => {
  for (const body of [null, [], 'text', 3]) {
    t.same((await issuesOf(parseScreenshot, body)).map((i) => i.path), ['body'], JSON.stringify(body));
  }
});

t.test('messages never echo the value', async (t) => {
  const secret = 'https://secret.example/' + 'x'.repeat(3000);
  const issues = await issuesOf(parseScreenshot, { url: secret, width: 'https://secret.example/' });
  for (const i of issues) t.notMatch(i.message, 'secret.example', i.path);
});

t.test('the largest bitmap is 2000 x 2000 at scale 2, checked before any browser (spec 4.2)', async (t) => {
  t.equal(MAX_BITMAP_PIXELS, 16_000_000);
  t.doesNotThrow(() => checkBitmap({ width: 2000, height: 2000, deviceScaleFactor: 2 }));
  t.throws(() => checkBitmap({ width: 2000, height: 2001, deviceScaleFactor: 2 }), ValidationFailure);
  t.throws(() => checkBitmap({ width: 4001, height: 4000, deviceScaleFactor: 1 }), ValidationFailure);
});

// A parsed body may hold `__proto__` and `constructor` as own keys; they are unknown fields like
// any other (a 400 naming them), never a lookup that finds Object.prototype's members.
t.test('prototype keys of a parsed body are unknown fields', async (t) => {
  const rows: Array<[string, Parse, string, string]> = [
    ['__proto__ beside html', parseHtmlToImage, '{"html":"<p>x</p>","__proto__":{"width":1}}', '__proto__'],
    ['constructor beside url', parseScreenshot, '{"url":"https://example.com/","constructor":{"prototype":{"polluted":1}}}', 'constructor'],
    ['__proto__ in a pdf', parsePdf, '{"html":"<p>x</p>","__proto__":{}}', '__proto__'],
    ['constructor in a margin', parsePdf, '{"html":"<p>x</p>","margin":{"constructor":"1px"}}', 'margin.constructor'],
  ];
  for (const [name, parse, json, path] of rows) {
    const issues = await issuesOf(parse, JSON.parse(json));
    t.same(issues.map((i) => i.path), [path], `${name}: refused by path`);
  }
});
