/** POST /v1/html-to-image (spec 4.3): supplied markup to a PNG of exactly width×scale by height×scale. */
import type { HtmlToImageRequest } from '../schemas/index.ts';
import { asBuffer, capture, rawMarkup, writeMarkup } from './page-work.ts';
import { inSpan } from './telemetry.ts';
import type { RenderContext } from './types.ts';

/** A transparent default background, as puppeteer's `omitBackground` sets it. */
const TRANSPARENT = { color: { r: 0, g: 0, b: 0, a: 0 } };

/** The page work of html-to-image. */
export async function htmlToImageWork(ctx: RenderContext, req: HtmlToImageRequest, deadline: number): Promise<Buffer> {
  const viewport = { width: req.width, height: req.height, deviceScaleFactor: req.deviceScaleFactor };
  let bytes: Uint8Array;
  if (rawMarkup(req.waitUntil)) {
    // The hot path: the prepared tab over raw CDP (renderer/browser/prepared-page.ts), no Page.
    const { cdp } = ctx;
    await cdp.setViewport(viewport);
    await writeMarkup(ctx, req.html, req.waitUntil, deadline);
    // Rule 2: no full-page option; the capture is the viewport, so anything laid out below is cut off.
    bytes = await capture({ 'tintype.format': 'png' }, async () => {
      if (req.omitBackground) await cdp.session.send('Emulation.setDefaultBackgroundColorOverride', TRANSPARENT);
      const { data } = await cdp.session.send('Page.captureScreenshot', { format: 'png', captureBeyondViewport: false });
      return Buffer.from(data, 'base64');
    });
  } else {
    const page = await ctx.page();
    await page.setViewport(viewport);
    await writeMarkup(ctx, req.html, req.waitUntil, deadline);
    // No clip: puppeteer would spend a round trip measuring the visual viewport for one.
    bytes = await capture({ 'tintype.format': 'png' }, () =>
      page.screenshot({ type: 'png', omitBackground: req.omitBackground, captureBeyondViewport: false }));
  }
  return inSpan('encode', { 'tintype.bytes': bytes.byteLength }, async () => asBuffer(bytes));
}
