/**
 * A page whose top frame navigates right after it loaded (a meta refresh to the same site): the
 * render follows it and captures the page it lands on, whatever `waitUntil` says, for a
 * screenshot and a pdf, instead of waiting out the render budget (spec Part 7: 504 means the
 * page never settled).
 */
import t from 'tap';
import { pngPixel, post, startHarness, startSite } from '../server/harness.ts';

let landed = 0;
const site = await startSite((req, res) => {
  const p = (req.url ?? '/').split('?', 1)[0];
  if (p === '/refresh') {
    res.writeHead(200, { 'content-type': 'text/html' });
    return res.end('<!doctype html><meta http-equiv="refresh" content="0;url=/landed"><body style="background:#00f">before');
  }
  if (p === '/script') {
    res.writeHead(200, { 'content-type': 'text/html' });
    return res.end('<!doctype html><body style="background:#00f"><script>addEventListener("load", () => location.replace("/landed"))</script>');
  }
  if (p === '/landed') {
    landed += 1;
    res.writeHead(200, { 'content-type': 'text/html' });
    return res.end('<!doctype html><body style="margin:0;background:#f00"><img src="/pixel.png">landed');
  }
  if (p === '/pixel.png') {
    res.writeHead(200, { 'content-type': 'image/png' });
    return res.end(Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64'));
  }
  res.writeHead(404).end();
});
const h = await startHarness();
t.teardown(async () => {
  await h.close();
  await site.close();
});

for (const path of ['/refresh', '/script']) {
  for (const waitUntil of ['load', 'domcontentloaded', 'networkidle'] as const) {
    t.test(`${path}, waitUntil ${waitUntil}: the page it lands on is rendered`, async (t) => {
      const before = landed;
      const a = await post(h, 'screenshot', { url: `${site.origin}${path}`, width: 200, height: 100, waitUntil });
      t.equal(a.status, 200, a.status === 200 ? 'rendered' : a.body.toString('utf8'));
      t.ok(landed > before, 'the page it navigated to was fetched');
      t.same(await pngPixel(a.body, 150, 50), [255, 0, 0, 255], 'and it is the page captured');
    });
  }
}

t.test('a pdf of a page that navigates after load is rendered too', async (t) => {
  for (const path of ['/refresh', '/script', '/refresh', '/script']) {
    const a = await post(h, 'pdf', { url: `${site.origin}${path}` });
    t.equal(a.status, 200, a.status === 200 ? `${path}: rendered` : a.body.toString('utf8'));
    t.equal(a.headers.get('content-type'), 'application/pdf');
  }
});
