import t from 'tap';
import { htmlToImageKey, pdfKey, screenshotKey } from '../../renderer/cache/keys.ts';
import { parseHtmlToImage, parsePdf, parseScreenshot } from '../../renderer/schemas/index.ts';

const U = 'https://example.com/a?b=1';

t.test('screenshot keys (spec Part 8 rule 3)', async (t) => {
  const k = async (body: object) => screenshotKey(await parseScreenshot(body));
  const base = await k({ url: U });
  t.match(base, /^screenshot:v2:[0-9a-f]{64}$/, 'version prefix and endpoint lead the key');
  t.equal(await k({ url: U + '#frag' }), base, 'fragment dropped');
  t.not(await k({ url: 'https://example.com/a?b=2' }), base, 'query kept');
  t.equal(await k({ url: 'HTTPS://EXAMPLE.com:443/a?b=1' }), base, 'URL normalised');
  t.equal(await k({ url: U, width: 1280, height: 800, format: 'png' }), base, 'defaults applied before hashing');
  t.equal(await k({ format: 'png', url: U }), base, 'field order does not matter');
  for (const [name, extra] of [
    ['width', { width: 1000 }], ['height', { height: 10 }], ['fullPage', { fullPage: true }],
    ['deviceScaleFactor', { deviceScaleFactor: 2 }], ['waitUntil', { waitUntil: 'networkidle' }],
    ['omitBackground', { omitBackground: true }], ['format', { format: 'jpeg' }],
  ] as const) {
    t.not(await k({ url: U, ...extra }), base, `${name} is part of the key`);
  }
  t.not(await k({ url: U, format: 'jpeg', quality: 50 }), await k({ url: U, format: 'jpeg' }), 'quality is part of the key');
  t.notMatch(base, 'example.com', 'the URL is hashed, not carried');
});

t.test('html-to-image keys', async (t) => {
  const k = async (body: object) => htmlToImageKey(await parseHtmlToImage(body));
  const base = await k({ html: '<p>x</p>' });
  t.match(base, /^html-to-image:v2:[0-9a-f]{64}$/);
  t.equal(await k({ html: '<p>x</p>', width: '1280', deviceScaleFactor: 1 }), base, 'coerced and defaulted values hash alike');
  t.not(await k({ html: '<p>y</p>' }), base, 'html by content');
  for (const extra of [{ width: 2 }, { height: 2 }, { deviceScaleFactor: 1.5 }, { omitBackground: true }, { waitUntil: 'load' as const }]) {
    const v = await k({ html: '<p>x</p>', ...extra });
    if ('waitUntil' in extra) t.equal(v, base, 'default waitUntil hashes like none');
    else t.not(v, base, JSON.stringify(extra));
  }
  t.not(await k({ html: 'x' }), await k({ html: 'x ' }), 'one character of difference is a different entry');
});

t.test('html is hashed by its UTF-16 code units: lone surrogates do not collide', async (t) => {
  const cases: Array<[string, string]> = [
    ['<p>\uD800</p>', '<p>\uFFFD</p>'],
    ['<p>\uDC00</p>', '<p>\uFFFD</p>'],
    ['<p>\uD800</p>', '<p>\uDBFF</p>'],
    ['<p>\uDC00\uD800</p>', '<p>\uFFFD\uFFFD</p>'],
  ];
  for (const [a, b] of cases) {
    const shown = JSON.stringify([a, b]);
    t.not(htmlToImageKey(await parseHtmlToImage({ html: a })), htmlToImageKey(await parseHtmlToImage({ html: b })), `html-to-image ${shown}`);
    t.not(pdfKey(await parsePdf({ html: a })), pdfKey(await parsePdf({ html: b })), `pdf ${shown}`);
  }
  const pair = '<p>\uD83D\uDE00</p>';
  t.equal(htmlToImageKey(await parseHtmlToImage({ html: pair })), htmlToImageKey(await parseHtmlToImage({ html: '<p>😀</p>' })), 'a surrogate pair is its character');
});

t.test('pdf keys', async (t) => {
  const k = async (body: object) => pdfKey(await parsePdf(body));
  const html = await k({ html: '<p>x</p>' });
  const url = await k({ url: U });
  t.match(html, /^pdf:v2:[0-9a-f]{64}$/);
  t.not(html, url, 'url and html forms differ');
  t.equal(await k({ url: U + '#x' }), url, 'fragment dropped');
  t.equal(await k({ html: '<p>x</p>', format: 'A4', landscape: false, printBackground: true, scale: 1, media: 'print' }), html, 'defaults');
  t.equal(
    await k({ margin: { left: '1px', top: '2px' }, html: '<p>x</p>' }),
    await k({ html: '<p>x</p>', margin: { top: '2px', left: '1px' } }),
    'margin key order does not matter',
  );
  t.not(await k({ html: '<p>x</p>', margin: { top: '1px' } }), await k({ html: '<p>x</p>', margin: { left: '1px' } }), 'margins by side');
  for (const extra of [
    { format: 'Letter' }, { landscape: true }, { printBackground: false }, { scale: 0.5 }, { pageRanges: '1' },
    { preferCSSPageSize: true }, { media: 'screen' }, { waitUntil: 'networkidle' },
  ]) {
    t.not(await k({ html: '<p>x</p>', ...extra }), html, JSON.stringify(extra));
  }
  // An html whose text equals the URL must not collide with the url form.
  t.not(await k({ html: U }), url);
});
