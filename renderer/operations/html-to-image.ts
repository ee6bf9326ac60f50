/** POST /v1/html-to-image (spec 4.3): supplied markup to a PNG of exactly width×scale by height×scale. */
import type { HtmlToImageRequest } from '../schemas/index.ts';
import { asBuffer, capture, writeMarkup } from './page-work.ts';
import { inSpan } from './telemetry.ts';
import type { RenderContext } from './types.ts';

/** The page work of html-to-image. */
export async function htmlToImageWork(ctx: RenderContext, req: HtmlToImageRequest, deadline: number): Promise<Buffer> {
  const { page } = ctx;
  await page.setViewport({ width: req.width, height: req.height, deviceScaleFactor: req.deviceScaleFactor });
  await writeMarkup(ctx, req.html, req.waitUntil, deadline);
  // Rule 2: no full-page option; the capture is the viewport, so anything laid out below is cut
  // off. No clip: puppeteer would spend a round trip measuring the visual viewport for one.
  const bytes = await capture({ 'tintype.format': 'png' }, () =>
    page.screenshot({ type: 'png', omitBackground: req.omitBackground, captureBeyondViewport: false }));
  return inSpan('encode', { 'tintype.bytes': bytes.byteLength }, async () => asBuffer(bytes));
}
