/** POST /v1/pdf (spec 4.4): a URL or markup to PDF, laid out in a 1280 × 800 viewport first. */
import { ValidationFailure } from '../../lib/errors.ts';
import type { PdfRequest } from '../schemas/index.ts';
import { asBuffer, capture, navigate, remaining, writeMarkup } from './page-work.ts';
import { inSpan } from './telemetry.ts';
import type { RenderContext } from './types.ts';

/** Spec 4.4 rule 1. */
export const PDF_VIEWPORT = { width: 1280, height: 800 } as const;

/** The page work of pdf. */
export async function pdfWork(ctx: RenderContext, req: PdfRequest, deadline: number): Promise<Buffer> {
  const { page } = ctx;
  await page.setViewport(PDF_VIEWPORT);
  await page.emulateMediaType(req.media);
  if (req.url !== undefined) await navigate(ctx, req.url, req.waitUntil, deadline);
  else await writeMarkup(ctx, req.html ?? '', req.waitUntil, deadline);
  const bytes = await capture({ 'tintype.format': req.format, 'tintype.landscape': req.landscape }, async () => {
    try {
      return await page.pdf({
        format: req.format,
        landscape: req.landscape,
        printBackground: req.printBackground,
        scale: req.scale,
        ...(req.margin !== undefined ? { margin: { ...req.margin } } : {}),
        ...(req.pageRanges !== undefined ? { pageRanges: req.pageRanges } : {}),
        preferCSSPageSize: req.preferCSSPageSize,
        timeout: remaining(deadline),
      });
    } catch (err) {
      // Chromium refuses ranges past the last page or backwards ("5-3"): the caller's input, not
      // a render failure (README, "Decisions").
      if (err instanceof Error && /page range/i.test(err.message)) {
        throw new ValidationFailure([{ path: 'pageRanges', message: 'pageRanges names pages the document does not have' }]);
      }
      throw err;
    }
  });
  return inSpan('encode', { 'tintype.bytes': bytes.byteLength }, async () => asBuffer(bytes));
}
