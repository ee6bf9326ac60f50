/** Request schemas of the render operations (spec 4.2 to 4.4) and the checks run before any browser. */
import { ValidationFailure } from '../../lib/errors.ts';
import { htmlToImageSchema, type HtmlToImageRequest } from './html-to-image.ts';
import { pdfSchema, type PdfRequest } from './pdf.ts';
import { screenshotSchema, type ScreenshotRequest } from './screenshot.ts';
import { DIMENSION_MAX, SCALE_MAX } from './fields.ts';
import { validateBody } from './validate.ts';

export type { HtmlToImageRequest, PdfRequest, ScreenshotRequest };
export { htmlToImageSchema, pdfSchema, screenshotSchema };

/** Spec 4.2: the largest possible bitmap is 2000 x 2000 at scale factor 2. */
export const MAX_BITMAP_PIXELS = DIMENSION_MAX * DIMENSION_MAX * SCALE_MAX * SCALE_MAX;

/**
 * Refuses a viewport whose bitmap would pass the spec's largest one, before a browser is used.
 * The schema ranges already keep every request inside it; this is the bound stated once, so a
 * change to one range cannot widen the bitmap unnoticed.
 */
export function checkBitmap(req: { width: number; height: number; deviceScaleFactor: number }): void {
  const pixels = req.width * req.height * req.deviceScaleFactor * req.deviceScaleFactor;
  if (pixels > MAX_BITMAP_PIXELS) {
    throw new ValidationFailure([
      { path: 'width', message: `width x height x deviceScaleFactor² must be at most ${MAX_BITMAP_PIXELS} pixels` },
    ]);
  }
}

export async function parseScreenshot(body: unknown): Promise<ScreenshotRequest> {
  const req = await validateBody(screenshotSchema, body);
  checkBitmap(req);
  return req;
}

export async function parseHtmlToImage(body: unknown): Promise<HtmlToImageRequest> {
  const req = await validateBody(htmlToImageSchema, body);
  checkBitmap(req);
  return req;
}

export async function parsePdf(body: unknown): Promise<PdfRequest> {
  return validateBody(pdfSchema, body);
}
