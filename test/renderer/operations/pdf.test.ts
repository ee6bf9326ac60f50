/**
 * pdf with real Chromium (spec 4.4), read back with poppler: page size and count for each
 * format and orientation, page ranges, margins in every unit, the document's own page size,
 * media, the url form, and the guard check before a slot is taken (rule 3).
 */
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { post, startHarness, startSite } from '../server/harness.ts';

const run = promisify(execFile);

/** Puppeteer's paper sizes in inches (width × height, portrait), as points below. */
const FORMATS: Record<string, [number, number]> = {
  Letter: [8.5, 11], Legal: [8.5, 14], Tabloid: [11, 17], Ledger: [17, 11],
  A0: [33.1102, 46.811], A1: [23.3858, 33.1102], A2: [16.5354, 23.3858], A3: [11.6929, 16.5354],
  A4: [8.2677, 11.6929], A5: [5.8268, 8.2677], A6: [4.1339, 5.8268],
};

const h = await startHarness();
const site = await startSite((_req, res) => {
  res.writeHead(200, { 'content-type': 'text/html' });
  res.end('<!doctype html><h1>from the site</h1>');
});
t.teardown(async () => {
  await h.close();
  await site.close();
});

let n = 0;
async function saved(pdf: Buffer): Promise<string> {
  const file = path.join(h.dir, `out-${++n}.pdf`);
  await writeFile(file, pdf);
  return file;
}

/** Page count and the first page's size in points, from pdfinfo. */
async function info(pdf: Buffer): Promise<{ pages: number; width: number; height: number }> {
  const { stdout } = await run('pdfinfo', [await saved(pdf)]);
  const pages = Number(/^Pages:\s+(\d+)/m.exec(stdout)?.[1]);
  const size = /^Page size:\s+([\d.]+) x ([\d.]+) pts/m.exec(stdout);
  return { pages, width: Number(size?.[1]), height: Number(size?.[2]) };
}

/** The page text, one string per page. */
async function text(pdf: Buffer): Promise<string[]> {
  const { stdout } = await run('pdftotext', ['-layout', await saved(pdf), '-']);
  return stdout.split('\f').slice(0, -1);
}

/** Where the first word sits on page 1, in points from the top left. */
async function firstWord(pdf: Buffer): Promise<{ x: number; y: number }> {
  const { stdout } = await run('pdftotext', ['-bbox', '-f', '1', '-l', '1', await saved(pdf), '-']);
  const m = /<word xMin="(-?[\d.]+)" yMin="(-?[\d.]+)"/.exec(stdout);
  if (m === null) throw new Error('no word on page 1');
  return { x: Number(m[1]), y: Number(m[2]) };
}

const PAGES = (count: number) =>
  `<!doctype html><style>section{break-after:page;font:20px sans-serif}</style>${Array.from(
    { length: count }, (_, i) => `<section>page${i + 1}</section>`).join('')}`;

t.test('each format, portrait and landscape: page size and count', async (t) => {
  for (const [format, [w, hgt]] of Object.entries(FORMATS)) {
    for (const landscape of [false, true]) {
      const a = await post(h, 'pdf', { html: PAGES(2), format, landscape });
      t.equal(a.status, 200, `${format} ${landscape ? 'landscape' : 'portrait'}: 200`);
      t.equal(a.headers.get('content-type'), 'application/pdf');
      t.equal(a.headers.get('cache-control'), 'no-store');
      const got = await info(a.body);
      const [ew, eh] = landscape ? [hgt * 72, w * 72] : [w * 72, hgt * 72];
      t.ok(Math.abs(got.width - ew) < 1.5 && Math.abs(got.height - eh) < 1.5,
        `${format} ${landscape ? 'landscape' : 'portrait'}: ${got.width}×${got.height} pt, expected ${ew.toFixed(1)}×${eh.toFixed(1)}`);
      t.equal(got.pages, 2, `${format}: two pages`);
    }
  }
  const a4 = await info((await post(h, 'pdf', { html: '<p>x</p>' })).body);
  t.ok(Math.abs(a4.width - 595.28) < 1.5 && Math.abs(a4.height - 841.89) < 1.5, 'default format is A4 portrait');
});

t.test('page ranges select pages', async (t) => {
  const rows = [
    { name: 'all pages when omitted', body: {}, pages: ['page1', 'page2', 'page3', 'page4', 'page5'] },
    { name: 'a range', body: { pageRanges: '2-3' }, pages: ['page2', 'page3'] },
    { name: 'a list with spaces', body: { pageRanges: '1, 4-5' }, pages: ['page1', 'page4', 'page5'] },
    { name: 'one page', body: { pageRanges: '5' }, pages: ['page5'] },
  ];
  for (const row of rows) {
    const a = await post(h, 'pdf', { html: PAGES(5), ...row.body });
    t.equal(a.status, 200, `${row.name}: 200`);
    t.same((await text(a.body)).map((p) => p.trim()), row.pages, row.name);
  }
  const past = await post(h, 'pdf', { html: PAGES(2), pageRanges: '7-9' });
  t.equal(past.status, 400, 'a range past the last page is the caller\'s input: 400');
  t.equal(past.json().error.issues[0].path, 'pageRanges');
});

t.test('margins in px, in, cm and mm move the content', async (t) => {
  const none = await firstWord((await post(h, 'pdf', { html: '<body style="margin:0"><p style="margin:0">word</p>', margin: { top: '0px', left: '0px' } })).body);
  t.ok(none.x < 2 && none.y < 6, `no margin: word at ${none.x},${none.y}`);
  for (const m of ['2in', '192px', '5.08cm', '50.8mm', '50.80mm']) {
    const a = await post(h, 'pdf', { html: '<body style="margin:0"><p style="margin:0">word</p>', margin: { top: m, left: m, right: '0mm', bottom: '0mm' } });
    t.equal(a.status, 200, `${m}: 200`);
    const at = await firstWord(a.body);
    t.ok(Math.abs(at.x - 144) < 2, `${m}: left edge at ${at.x} pt (144 expected)`);
    t.ok(Math.abs(at.y - 144) < 2, `${m}: top edge at ${at.y} pt (144 expected)`);
  }
});

t.test("preferCSSPageSize lets the document's @page size win over format", async (t) => {
  const html = '<style>@page{size:3in 4in}</style><p>x</p>';
  const own = await info((await post(h, 'pdf', { html, preferCSSPageSize: true, format: 'A3' })).body);
  t.ok(Math.abs(own.width - 216) < 1.5 && Math.abs(own.height - 288) < 1.5, `own size ${own.width}×${own.height}`);
  const fmt = await info((await post(h, 'pdf', { html, format: 'A3' })).body);
  t.ok(Math.abs(fmt.width - 841.89) < 1.5 && Math.abs(fmt.height - 1190.55) < 1.5, `format wins by default: ${fmt.width}×${fmt.height}`);
});

t.test('media print or screen', async (t) => {
  const html = '<style>@media print{.s{display:none}} @media screen{.p{display:none}}</style><p class=s>onscreen</p><p class=p>onprint</p>';
  const print = (await text((await post(h, 'pdf', { html })).body)).join('');
  t.match(print, 'onprint');
  t.notMatch(print, 'onscreen');
  const screen = (await text((await post(h, 'pdf', { html, media: 'screen' })).body)).join('');
  t.match(screen, 'onscreen');
  t.notMatch(screen, 'onprint');
});

t.test('laid out in a 1280 × 800 viewport (rule 1)', async (t) => {
  const a = await post(h, 'pdf', { html: '<p id=w>w</p><script>document.getElementById("w").textContent="vw"+innerWidth+"x"+innerHeight</script>', media: 'screen' });
  t.match((await text(a.body)).join(''), 'vw1280x800');
});

t.test('url form: rendered from the site; a refused address answers 422 before a slot is taken', async (t) => {
  const a = await post(h, 'pdf', { url: `${site.origin}/` });
  t.equal(a.status, 200);
  t.match((await text(a.body)).join(''), 'from the site');
  const before = h.pool.stats().renders;
  for (const [url, reason] of [
    ['http://127.0.0.1:9/', 'private_address'],
    ['file:///etc/passwd', 'bad_scheme'],
    ['http://user:pw@example.com/', 'credentials_in_url'],
    ['http://printer.local/', 'bad_host'],
  ] as const) {
    const r = await post(h, 'pdf', { url });
    t.equal(r.status, 422, `${reason}: 422`);
    t.same(r.json(), { error: 'url_rejected', reason }, `${reason}: body, no URL echoed`);
  }
  t.equal(h.pool.stats().renders, before, 'no render slot was used for a refused address');
});
