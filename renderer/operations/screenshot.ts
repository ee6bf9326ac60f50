/** POST /v1/screenshot (spec 4.2): a public URL to PNG or JPEG. */
import { FULL_PAGE_MAX_HEIGHT } from '../schemas/fields.ts';
import type { ScreenshotRequest } from '../schemas/index.ts';
import { asBuffer, capture, navigate } from './page-work.ts';
import { inSpan } from './telemetry.ts';
import type { RenderContext } from './types.ts';

export function screenshotContentType(req: ScreenshotRequest): string {
  return req.format === 'jpeg' ? 'image/jpeg' : 'image/png';
}

/** The page work of a screenshot. */
export async function screenshotWork(ctx: RenderContext, req: ScreenshotRequest, deadline: number): Promise<Buffer> {
  // A URL is loaded under the navigation rules, through the tab's puppeteer Page.
  const page = await ctx.page();
  await page.setViewport({ width: req.width, height: req.height, deviceScaleFactor: req.deviceScaleFactor });
  await navigate(ctx, req.url, req.waitUntil, deadline);
  const bytes = await capture({ 'tintype.format': req.format, 'tintype.full_page': req.fullPage }, async () => {
    const common = {
      type: req.format,
      ...(req.format === 'jpeg' && req.quality !== undefined ? { quality: req.quality } : {}),
      omitBackground: req.omitBackground,
    };
    // Without fullPage the capture is the viewport itself (no clip, so no extra round trip).
    if (!req.fullPage) return page.screenshot({ ...common, captureBeyondViewport: false });
    // A string expression: it runs in the page, where the DOM exists (this file is not type-checked for it).
    const scrollHeight = Number(await page.evaluate(
      'Math.max(document.documentElement ? document.documentElement.scrollHeight : 0, document.body ? document.body.scrollHeight : 0)',
    ));
    const height = Math.min(Math.max(1, Math.ceil(scrollHeight)), FULL_PAGE_MAX_HEIGHT);
    return page.screenshot({ ...common, clip: { x: 0, y: 0, width: req.width, height }, captureBeyondViewport: true });
  });
  return inSpan('encode', { 'tintype.bytes': bytes.byteLength }, async () => asBuffer(bytes));
}
