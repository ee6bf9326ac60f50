/** POST /v1/screenshot (spec 4.2): a public URL to PNG or JPEG. */
import { FULL_PAGE_MAX_HEIGHT } from '../schemas/fields.ts';
import type { ScreenshotRequest } from '../schemas/index.ts';
import { capture, navigate } from './page-work.ts';
import { inSpan } from './telemetry.ts';
import type { RenderContext } from './types.ts';

export function screenshotContentType(req: ScreenshotRequest): string {
  return req.format === 'jpeg' ? 'image/jpeg' : 'image/png';
}

/** The page's whole scroll height in CSS pixels (run in the page, where the DOM exists). */
const SCROLL_HEIGHT = 'Math.max(document.documentElement ? document.documentElement.scrollHeight : 0, document.body ? document.body.scrollHeight : 0)';

/**
 * The page work of a screenshot. The viewport is the prepared tab's to set, before the URL is
 * requested (renderer/browser/prepared-page.ts): the page loads at the size and scale asked for.
 */
export async function screenshotWork(ctx: RenderContext, req: ScreenshotRequest, deadline: number): Promise<Buffer> {
  const { cdp } = ctx;
  await cdp.setViewport({ width: req.width, height: req.height, deviceScaleFactor: req.deviceScaleFactor });
  await navigate(ctx, req.url, req.waitUntil, deadline);
  const bytes = await capture({ 'tintype.format': req.format, 'tintype.full_page': req.fullPage }, async () => {
    const options = {
      format: req.format,
      ...(req.format === 'jpeg' && req.quality !== undefined ? { quality: req.quality } : {}),
      omitBackground: req.omitBackground,
    };
    // Without fullPage the capture is the viewport itself.
    if (!req.fullPage) return cdp.screenshot(options);
    const scrollHeight = Number(await cdp.evaluate(SCROLL_HEIGHT));
    return cdp.screenshot({ ...options, height: Math.min(Math.max(1, Math.ceil(scrollHeight)), FULL_PAGE_MAX_HEIGHT) });
  });
  return inSpan('encode', { 'tintype.bytes': bytes.byteLength }, async () => bytes);
}
