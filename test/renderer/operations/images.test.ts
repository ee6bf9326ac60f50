/**
 * screenshot and html-to-image with real Chromium (spec 4.2, 4.3, 2.1): pixel sizes for each
 * size and scale, fullPage clipping at 8000 px, nothing below `height`, transparency with
 * omitBackground, JPEG quality, and the `x-render-blocked` count of refused sub-resources.
 */
import t from 'tap';
import { jpegSize, pngColourType, pngPixel, pngSize, post, startHarness, startSite } from '../server/harness.ts';
import { BLOCKED_HEADER } from '../../../renderer/server/answer-headers.ts';

const TALL = (px: number) => `<!doctype html><body style="margin:0"><div style="height:${px}px;background:#08f"></div></body>`;
// Noise a JPEG encoder cannot shrink much at high quality, so quality shows in the size.
const NOISE = `<!doctype html><body style="margin:0"><canvas id=c width=400 height=300></canvas><script>
const x=document.getElementById('c').getContext('2d');let s=7;
for(let i=0;i<400;i+=4)for(let j=0;j<300;j+=4){s=(s*1103515245+12345)%2147483648;x.fillStyle='#'+(s%16777216).toString(16).padStart(6,'0');x.fillRect(i,j,4,4);}
</script></body>`;
const BLOCKED = (n: number) =>
  `<!doctype html><body>${Array.from({ length: n }, (_, i) => `<img src="http://10.9.${i}.1/p.png">`).join('')}</body>`;

const site = await startSite((req, res) => {
  const u = new URL(req.url ?? '/', 'http://x');
  res.writeHead(200, { 'content-type': 'text/html' });
  if (u.pathname === '/tall') return res.end(TALL(Number(u.searchParams.get('px'))));
  if (u.pathname === '/noise') return res.end(NOISE);
  if (u.pathname === '/blocked') return res.end(BLOCKED(Number(u.searchParams.get('n'))));
  if (u.pathname === '/bare') return res.end('<!doctype html><p style="margin:40px">bare</p>');
  res.end('<!doctype html><h1>hello</h1>');
});
const h = await startHarness();
t.teardown(async () => {
  await h.close();
  await site.close();
});

t.test('screenshot: output is width×scale by height×scale for each size and scale', async (t) => {
  const rows = [
    { name: 'defaults 1280×800', body: {}, size: { width: 1280, height: 800 } },
    { name: 'smallest 1×1', body: { width: 1, height: 1 }, size: { width: 1, height: 1 } },
    { name: '333×222 at 2', body: { width: 333, height: 222, deviceScaleFactor: 2 }, size: { width: 666, height: 444 } },
    { name: '400×300 at 1.5', body: { width: 400, height: 300, deviceScaleFactor: 1.5 }, size: { width: 600, height: 450 } },
    { name: 'largest 2000×2000 at 2', body: { width: 2000, height: 2000, deviceScaleFactor: 2 }, size: { width: 4000, height: 4000 } },
  ];
  for (const row of rows) {
    const a = await post(h, 'screenshot', { url: `${site.origin}/`, ...row.body });
    t.equal(a.status, 200, `${row.name}: 200`);
    t.equal(a.headers.get('content-type'), 'image/png', `${row.name}: image/png`);
    t.same(pngSize(a.body), row.size, row.name);
  }
});

t.test('screenshot: fullPage keeps the width and captures the scroll height, clipped at 8000', async (t) => {
  const rows = [
    { name: 'shorter than the viewport', px: 100, fullPage: true, height: 800 },
    { name: '1500 px page', px: 1500, fullPage: true, height: 1500 },
    { name: '7999 px page', px: 7999, fullPage: true, height: 7999 },
    { name: '8000 px page', px: 8000, fullPage: true, height: 8000 },
    { name: '12000 px page clipped', px: 12000, fullPage: true, height: 8000 },
    { name: 'without fullPage the viewport height', px: 12000, fullPage: false, height: 800 },
  ];
  for (const row of rows) {
    const a = await post(h, 'screenshot', { url: `${site.origin}/tall?px=${row.px}`, width: 640, fullPage: row.fullPage });
    t.equal(a.status, 200, `${row.name}: 200`);
    t.same(pngSize(a.body), { width: 640, height: row.height }, row.name);
  }
  const scaled = await post(h, 'screenshot', { url: `${site.origin}/tall?px=9000`, width: 100, fullPage: true, deviceScaleFactor: 2 });
  t.same(pngSize(scaled.body), { width: 200, height: 16000 }, 'the clip is 8000 CSS px, so 16000 device px at scale 2');
});

t.test('html-to-image: exactly width×scale by height×scale, nothing below height', async (t) => {
  const rows = [
    { name: 'defaults', body: {}, size: { width: 1280, height: 800 } },
    { name: '1×1', body: { width: 1, height: 1 }, size: { width: 1, height: 1 } },
    { name: 'digit strings are coerced', body: { width: '300', height: '200', deviceScaleFactor: '2' }, size: { width: 600, height: 400 } },
    { name: 'fraction 1.25', body: { width: 400, height: 400, deviceScaleFactor: 1.25 }, size: { width: 500, height: 500 } },
    { name: 'largest 2000×2000 at 2', body: { width: 2000, height: 2000, deviceScaleFactor: 2 }, size: { width: 4000, height: 4000 } },
  ];
  for (const row of rows) {
    const a = await post(h, 'html-to-image', { html: TALL(5000), ...row.body });
    t.equal(a.status, 200, `${row.name}: 200`);
    t.equal(a.headers.get('content-type'), 'image/png', `${row.name}: image/png`);
    t.same(pngSize(a.body), row.size, row.name);
  }
});

t.test('html-to-image: relative URLs resolve to nothing and raise no error (4.3 rule 4)', async (t) => {
  const a = await post(h, 'html-to-image', { html: '<img src="/x.png"><link rel=stylesheet href="a.css"><p>ok</p>', width: 50, height: 50 });
  t.equal(a.status, 200);
  t.equal(a.headers.get(BLOCKED_HEADER), '0', 'nothing was attempted, so nothing was refused');
});

t.test('omitBackground gives transparency where the document leaves the background unset', async (t) => {
  const clear = await post(h, 'html-to-image', { html: '<p>x</p>', width: 20, height: 20, omitBackground: true });
  t.equal(pngColourType(clear.body), 6, 'RGBA');
  t.equal((await pngPixel(clear.body, 19, 19))[3], 0, 'corner pixel fully transparent');
  const white = await post(h, 'html-to-image', { html: '<p>x</p>', width: 20, height: 20 });
  t.same(await pngPixel(white.body, 19, 19), [255, 255, 255, 255], 'white ground by default');
  const own = await post(h, 'html-to-image', {
    html: '<html style="background:#ff0000"><body></body></html>', width: 20, height: 20, omitBackground: true,
  });
  t.same(await pngPixel(own.body, 19, 19), [255, 0, 0, 255], "the document's own background stays (4.3 rule 3)");
  const shot = await post(h, 'screenshot', { url: `${site.origin}/bare`, width: 20, height: 20, omitBackground: true });
  t.equal((await pngPixel(shot.body, 19, 19))[3], 0, 'screenshot: transparent too');
});

t.test('jpeg: content type, size, and quality changes the size', async (t) => {
  const low = await post(h, 'screenshot', { url: `${site.origin}/noise`, width: 400, height: 300, format: 'jpeg', quality: 10 });
  const high = await post(h, 'screenshot', { url: `${site.origin}/noise`, width: 400, height: 300, format: 'jpeg', quality: 95 });
  t.equal(low.status, 200);
  t.equal(low.headers.get('content-type'), 'image/jpeg');
  t.same(jpegSize(low.body), { width: 400, height: 300 });
  t.ok(high.body.length > low.body.length * 2, `quality 95 (${high.body.length} B) is much larger than quality 10 (${low.body.length} B)`);
});

t.test('x-render-blocked counts refused sub-resources of the live render (spec 2.1)', async (t) => {
  for (const n of [0, 1, 3]) {
    const shot = await post(h, 'screenshot', { url: `${site.origin}/blocked?n=${n}`, width: 50, height: 50 });
    t.equal(shot.status, 200);
    t.equal(shot.headers.get(BLOCKED_HEADER), String(n), `screenshot with ${n} refused images`);
    const html = await post(h, 'html-to-image', { html: BLOCKED(n), width: 50, height: 50 });
    t.equal(html.status, 200);
    t.equal(html.headers.get(BLOCKED_HEADER), String(n), `html-to-image with ${n} refused images`);
    const pdf = await post(h, 'pdf', { html: BLOCKED(n) });
    t.equal(pdf.status, 200);
    t.equal(pdf.headers.get(BLOCKED_HEADER), n === 0 ? null : String(n), `pdf with ${n}: present only when not zero`);
  }
});
