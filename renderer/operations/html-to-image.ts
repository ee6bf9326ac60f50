/** POST /v1/html-to-image (spec 4.3): supplied markup to a PNG of exactly width×scale by height×scale. */
import type { HtmlToImageRequest } from '../schemas/index.ts';
import { capture, writeMarkup } from './page-work.ts';
import { inSpan } from './telemetry.ts';
import type { RenderContext } from './types.ts';

/** The page work of html-to-image, on the prepared tab over raw CDP (renderer/browser/prepared-page.ts). */
export async function htmlToImageWork(ctx: RenderContext, req: HtmlToImageRequest, deadline: number): Promise<Buffer> {
  const { cdp } = ctx;
  await cdp.setViewport({ width: req.width, height: req.height, deviceScaleFactor: req.deviceScaleFactor });
  await writeMarkup(ctx, req.html, req.waitUntil, deadline);
  // Rule 2: no full-page option; the capture is the viewport, so anything laid out below is cut off.
  const bytes = await capture({ 'tintype.format': 'png' }, () => cdp.screenshot({ format: 'png', omitBackground: req.omitBackground }));
  return inSpan('encode', { 'tintype.bytes': bytes.byteLength }, async () => bytes);
}
