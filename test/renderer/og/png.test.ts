import { inflateSync } from 'node:zlib';
import puppeteer from 'puppeteer-core';
import t from 'tap';
import { drawCard, paintPixels } from '../../../renderer/og/draw.ts';
import { TEMPLATES, THEMES } from '../../../renderer/og/fields.ts';
import { MIXED, SCRIPTS, fullCard } from '../../../renderer/og/samples.ts';
import { decodePng, encodePng, MIN_GROUND_ROWS } from '../../../renderer/og/typeset/png.ts';

function chunks(png: Buffer): { type: string; data: Buffer }[] {
  const out: { type: string; data: Buffer }[] = [];
  for (let p = 8; p < png.length; ) {
    const length = png.readUInt32BE(p);
    out.push({ type: png.toString('latin1', p + 4, p + 8), data: png.subarray(p + 8, p + 8 + length) });
    p += 12 + length;
  }
  return out;
}

t.test('the encoder writes a valid RGB PNG that decodes to the same pixels', async (t) => {
  const width = 37;
  const height = 11;
  const rgba = new Uint8Array(width * height * 4);
  for (let i = 0; i < rgba.length; i += 4) {
    rgba[i] = (i * 7) & 255;
    rgba[i + 1] = (i * 13) & 255;
    rgba[i + 2] = (i >> 3) & 255;
    rgba[i + 3] = 255;
  }
  const png = encodePng(rgba, width, height);
  t.same([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'signature');
  const list = chunks(png);
  t.same(list.map((c) => c.type), ['IHDR', 'IDAT', 'IEND']);
  const ihdr = list[0]!.data;
  t.same([ihdr.readUInt32BE(0), ihdr.readUInt32BE(4), ihdr[8], ihdr[9], ihdr[12]], [width, height, 8, 2, 0], '8-bit RGB, not interlaced');
  t.equal(inflateSync(list[1]!.data).length, (width * 3 + 1) * height, 'one filter byte and three bytes a pixel per row');
  const back = decodePng(png);
  t.same([back.width, back.height], [width, height]);
  t.same(Buffer.from(back.data), Buffer.from(rgba), 'the same pixels');
});

t.test('rows of any width, from pixels at any byte offset, decode to the same pixels', async (t) => {
  // Widths that leave 0-3 pixels after the last group of four, and a view not on a word boundary.
  for (const width of [1, 2, 3, 4, 5, 6, 7, 1199, 1200]) {
    const height = 5;
    const rgba = new Uint8Array(width * height * 4).map((_, i) => ((i & 3) === 3 ? 255 : (i * 29 + (i >> 7)) & 255));
    const shifted = new Uint8Array(rgba.length + 1).subarray(1);
    shifted.set(rgba);
    for (const [how, pixels] of [['word-aligned', rgba], ['unaligned', shifted]] as const) {
      const back = decodePng(encodePng(pixels, width, height));
      t.same(Buffer.from(back.data), Buffer.from(rgba), `width ${width}, ${how}`);
    }
  }
});

t.test('rows equal to the ground, in runs of any length anywhere, decode to the same pixels', async (t) => {
  const width = 29;
  const height = 40;
  const base = new Uint8Array(width * height * 4).map((_, i) => ((i & 3) === 3 ? 255 : (i * 31 + (i >> 9)) & 255));
  const short = MIN_GROUND_ROWS - 1;
  const rows: [string, number, number][] = [
    ['no row of the ground', 0, 0],
    ['every row the ground', 0, height],
    [`${short} rows (too few to keep) at the start`, 0, short],
    [`${MIN_GROUND_ROWS} rows at the start`, 0, MIN_GROUND_ROWS],
    [`${MIN_GROUND_ROWS + 1} rows in the middle`, 10, 10 + MIN_GROUND_ROWS + 1],
    [`${short} rows in the middle`, 10, 10 + short],
    [`${MIN_GROUND_ROWS} rows at the end`, height - MIN_GROUND_ROWS, height],
    [`${short} rows at the end`, height - short, height],
  ];
  for (const [name, from, to] of rows) {
    // The ground differs from the image everywhere but in rows [from, to).
    const g = base.map((v, i) => ((i & 3) === 3 ? 255 : v ^ 0x55));
    g.set(base.subarray(from * width * 4, to * width * 4), from * width * 4);
    // Twice: the second encoding reuses the ground's pieces deflated by the first. Then told
    // which rows were drawn on, as the card's surface tells it, so the others are not compared.
    const drawnRows = new Uint8Array(height).map((_, y) => (y >= from && y < to ? 0 : 1));
    for (const [pass, options] of [['first', { ground: g }], ['second', { ground: g }], ['drawn rows told', { ground: g, drawnRows }]] as const) {
      const png = encodePng(base, width, height, options);
      t.same(Buffer.from(decodePng(png).data), Buffer.from(base), `${name}, ${pass} encoding`);
    }
  }
});

t.test('Chromium decodes every drawn card to the pixels that were encoded', async (t) => {
  const browser = await puppeteer.launch({
    executablePath: '/usr/bin/chromium-headless-shell',
    headless: 'shell',
    pipe: true,
    // The page loads nothing: the image is handed over as bytes.
    args: ['--no-sandbox', '--disable-gpu', '--host-resolver-rules=MAP * ~NOTFOUND', '--disable-background-networking'],
  });
  t.teardown(() => browser.close());
  const page = await browser.newPage();
  const cards = [...TEMPLATES.flatMap((template) => THEMES.map((theme) => fullCard(template, theme, SCRIPTS.latin!))),
    fullCard('title', 'dark', MIXED), fullCard('board', 'light', SCRIPTS.emoji!)];
  for (const card of cards) {
    // The PNG a drawing thread sends (ground rows reused), then the pixels it was made from.
    const png = drawCard(card);
    const pixels = paintPixels(card).pixels.slice();
    // Decoded in the page (a string: these tests have no DOM types), read back as RGBA bytes.
    const decoded = (await page.evaluate(`(async (base64) => {
      const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
      const image = await createImageBitmap(new Blob([bytes], { type: 'image/png' }), { colorSpaceConversion: 'none', premultiplyAlpha: 'none' });
      const canvas = new OffscreenCanvas(image.width, image.height);
      const context = canvas.getContext('2d');
      context.drawImage(image, 0, 0);
      const data = context.getImageData(0, 0, image.width, image.height).data;
      let out = '';
      for (let i = 0; i < data.length; i += 0x8000) out += String.fromCharCode(...data.subarray(i, i + 0x8000));
      return { width: image.width, height: image.height, rgba: btoa(out) };
    })(${JSON.stringify(png.toString('base64'))})`)) as { width: number; height: number; rgba: string };
    const name = `${card.template} ${card.theme} "${card.title.slice(0, 24)}"`;
    t.same([decoded.width, decoded.height], [1200, 630], `${name}: size`);
    const rgba = Buffer.from(decoded.rgba, 'base64');
    for (let i = 3; i < pixels.length; i += 4) pixels[i] = 255; // opaque: the file has no alpha
    t.ok(rgba.equals(Buffer.from(pixels)), `${name}: Chromium's pixels are the card's`);
  }
});

t.test('a corrupt file is refused', async (t) => {
  t.throws(() => decodePng(Buffer.from('not a png at all')), /not a PNG/);
});
