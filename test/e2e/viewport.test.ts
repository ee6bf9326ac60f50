/**
 * A page loads at the size and scale it asked for, in every operation (spec 4.2 to 4.4; the
 * fields describe the page's viewport, not a resize of the picture; docs/architecture.md §3).
 * Through `tintype start`'s HTTP API with the real Chromium, a probe page reports what it saw
 * while it was parsed (viewport, scale, screen, a width media query, the `srcset` candidate it
 * fetched). The matrix runs in order on one service whose browser is recycled every few renders,
 * so each render either follows a render of another size in the same browser or is the first of
 * a fresh one.
 */
import t from 'tap';
import { randomUUID } from 'node:crypto';
import { cleanup, jsonWith, startService, type Service } from './service.ts';
import { startProbeSite, type ProbeSite } from './viewport-probe.ts';

/** A fresh browser after this many renders: with the matrix below, every few rows start one. */
const RECYCLE_AFTER = 3;

interface Row {
  name: string;
  path: '/v1/screenshot' | '/v1/html-to-image' | '/v1/pdf';
  /** `url` or `html` form (pdf takes both). */
  input: 'url' | 'html';
  /** The request's other fields. */
  fields: Record<string, unknown>;
  /** The viewport the page must see while it loads. */
  viewport: { width: number; height: number; deviceScaleFactor: number };
  /** The PNG's size in pixels, for image operations. */
  png?: { width: number; height: number };
}

const shot = (name: string, fields: Record<string, unknown>, width: number, height: number, scale: number, png = { width: Math.round(width * scale), height: Math.round(height * scale) }): Row => ({
  name: `screenshot ${name}`, path: '/v1/screenshot', input: 'url', fields, viewport: { width, height, deviceScaleFactor: scale }, png,
});
const markup = (name: string, fields: Record<string, unknown>, width: number, height: number, scale: number): Row => ({
  name: `html-to-image ${name}`, path: '/v1/html-to-image', input: 'html', fields, viewport: { width, height, deviceScaleFactor: scale },
  png: { width: Math.round(width * scale), height: Math.round(height * scale) },
});
/** Spec 4.4 rule 1: pages are laid out in a 1280 × 800 viewport at scale 1. */
const pdf = (name: string, input: 'url' | 'html', fields: Record<string, unknown>): Row => ({
  name: `pdf ${input} ${name}`, path: '/v1/pdf', input, fields, viewport: { width: 1280, height: 800, deviceScaleFactor: 1 },
});

/** Sizes alternate, so no row follows one of its own size. */
const MATRIX: Row[] = [
  shot('640×400 ×2', { width: 640, height: 400, deviceScaleFactor: 2 }, 640, 400, 2),
  shot('1×1 ×1', { width: 1, height: 1 }, 1, 1, 1),
  shot('defaults', {}, 1280, 800, 1),
  shot('300×200 ×1.5 networkidle', { width: 300, height: 200, deviceScaleFactor: 1.5, waitUntil: 'networkidle' }, 300, 200, 1.5),
  shot('640×400 ×1 domcontentloaded', { width: 640, height: 400, waitUntil: 'domcontentloaded' }, 640, 400, 1),
  shot('2000×2000 ×2, the largest bitmap', { width: 2000, height: 2000, deviceScaleFactor: 2 }, 2000, 2000, 2),
  shot('500×300 ×2 fullPage', { width: 500, height: 300, deviceScaleFactor: 2, fullPage: true }, 500, 300, 2),
  shot('400×240 ×1.5 fullPage domcontentloaded jpeg', { width: 400, height: 240, deviceScaleFactor: 1.5, fullPage: true, waitUntil: 'domcontentloaded', format: 'jpeg', quality: 80 }, 400, 240, 1.5),
  markup('1×1 ×1', { width: 1, height: 1 }, 1, 1, 1),
  markup('640×400 ×2', { width: 640, height: 400, deviceScaleFactor: 2 }, 640, 400, 2),
  markup('300×200 ×1.5 networkidle', { width: 300, height: 200, deviceScaleFactor: 1.5, waitUntil: 'networkidle' }, 300, 200, 1.5),
  pdf('default', 'url', {}),
  markup('2000×2000 ×2 domcontentloaded', { width: 2000, height: 2000, deviceScaleFactor: 2, waitUntil: 'domcontentloaded' }, 2000, 2000, 2),
  pdf('media screen networkidle', 'html', { media: 'screen', waitUntil: 'networkidle' }),
  markup('defaults', {}, 1280, 800, 1),
  pdf('landscape domcontentloaded', 'url', { landscape: true, waitUntil: 'domcontentloaded' }),
  shot('300×200 ×1', { width: 300, height: 200 }, 300, 200, 1),
  pdf('default', 'html', {}),
];

let probe: ProbeSite;
let svc: Service;
let secret: string;

t.before(async () => {
  probe = await startProbeSite();
  svc = await startService({
    env: { TINTYPE_SLOTS: '1', TINTYPE_RECYCLE_AFTER_RENDERS: String(RECYCLE_AFTER), GUARD_ALLOW_CIDRS: '127.0.0.2/32' },
    plans: { roomy: { monthlyQuota: 1000, perMinute: 240, concurrentRenders: 1 } },
  });
  ({ secret } = await svc.key('roomy'));
});
t.teardown(async () => {
  await svc?.signal('SIGTERM');
  await probe?.close();
  cleanup();
});

/** Width and height of a PNG or a baseline/progressive JPEG. */
function imageSize(bytes: Buffer): { width: number; height: number } {
  if (bytes.subarray(1, 4).toString('latin1') === 'PNG') return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
  for (let i = 2; i + 9 < bytes.length;) {
    const marker = bytes[i + 1]!;
    if (marker === 0xc0 || marker === 0xc1 || marker === 0xc2) return { width: bytes.readUInt16BE(i + 7), height: bytes.readUInt16BE(i + 5) };
    i += 2 + bytes.readUInt16BE(i + 2);
  }
  throw new Error('neither a PNG nor a JPEG with a frame header');
}

/** `tintype_browser_restarts_total`, every reason summed. */
async function restarts(): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${svc.adminPort}/metrics`)).text();
  let n = 0;
  for (const m of text.matchAll(/^tintype_browser_restarts_total(?:\{[^}]*\})? (\d+)$/gm)) n += Number(m[1]);
  return n;
}

t.test('each render loads its document at its own viewport and scale', async (t) => {
  for (const row of MATRIX) {
    await t.test(row.name, async (t) => {
      const id = randomUUID();
      const { width, height, deviceScaleFactor } = row.viewport;
      const source = row.input === 'url' ? { url: probe.url(id, width) } : { html: probe.html(id, width) };
      const answer = await svc.call({ method: 'POST', path: row.path, headers: jsonWith(secret), body: JSON.stringify({ ...source, ...row.fields }) });
      t.equal(answer.status, 200, answer.status === 200 ? 'rendered' : answer.body.toString('utf8'));
      t.equal(answer.headers['x-cache'], 'miss', 'rendered for this call');
      const seen = await probe.seen(id);
      t.same(
        { innerWidth: seen.innerWidth, innerHeight: seen.innerHeight, devicePixelRatio: seen.devicePixelRatio },
        { innerWidth: width, innerHeight: height, devicePixelRatio: deviceScaleFactor },
        'the viewport and scale while the document was parsed',
      );
      t.ok(seen.minWidthMatches, `(min-width: ${width}px) matched while parsing`);
      t.notOk(seen.widerMatches, `(min-width: ${width + 1}px) did not`);
      t.ok(seen.screenWidth >= width && seen.screenHeight >= height, `the screen (${seen.screenWidth}×${seen.screenHeight}) is not smaller than the window`);
      t.equal(await probe.candidate(id), `${deviceScaleFactor}x`, 'the srcset candidate of its scale was fetched');
      if (row.png !== undefined) t.same(imageSize(answer.body), row.png, 'the picture is the viewport times the scale');
      else t.equal(answer.body.subarray(0, 5).toString('latin1'), '%PDF-', 'a PDF');
    });
  }
  // The matrix crossed browsers: some rows were the first render of a fresh one.
  const recycled = await restarts();
  t.ok(recycled >= 2, `the browser was recycled along the way (${recycled} times)`);
});
