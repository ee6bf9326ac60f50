/** POST /v1/pdf (spec 4.4): a URL or markup to PDF, laid out in a 1280 × 800 viewport first. */
import { ServiceError, ValidationFailure } from '../../lib/errors.ts';
import type { PdfRequest } from '../schemas/index.ts';
import { capture, navigate, remaining, writeMarkup } from './page-work.ts';
import { inSpan } from './telemetry.ts';
import type { RenderContext } from './types.ts';

/** Spec 4.4 rule 1. */
export const PDF_VIEWPORT = { width: 1280, height: 800 } as const;

/**
 * Reads Chromium's PDF stream, giving up as soon as it passes `maxBytes` (spec Part 7
 * render_too_large) instead of holding a document of any size in memory first.
 */
async function readBounded(stream: ReadableStream<Uint8Array>, maxBytes: number): Promise<Buffer> {
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => undefined); // the context is closed after the render anyway
      throw new ServiceError('render_too_large');
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks, size);
}

/** The page work of pdf. */
export async function pdfWork(ctx: RenderContext, req: PdfRequest, deadline: number, maxBytes: number): Promise<Buffer> {
  const { page } = ctx;
  await page.setViewport(PDF_VIEWPORT);
  // Chromium prints with print media already; only `screen` needs emulating (one round trip saved).
  if (req.media === 'screen') await page.emulateMediaType('screen');
  if (req.url !== undefined) await navigate(ctx, req.url, req.waitUntil, deadline);
  else await writeMarkup(ctx, req.html ?? '', req.waitUntil, deadline);
  const bytes = await capture({ 'tintype.format': req.format, 'tintype.landscape': req.landscape }, async () => {
    try {
      const stream = await page.createPDFStream({
        format: req.format,
        landscape: req.landscape,
        printBackground: req.printBackground,
        scale: req.scale,
        ...(req.margin !== undefined ? { margin: { ...req.margin } } : {}),
        ...(req.pageRanges !== undefined ? { pageRanges: req.pageRanges } : {}),
        preferCSSPageSize: req.preferCSSPageSize,
        timeout: remaining(deadline),
      });
      return await readBounded(stream, maxBytes);
    } catch (err) {
      // Chromium refuses ranges past the last page or backwards ("5-3"): the caller's input, not
      // a render failure (docs/decisions.md).
      if (err instanceof Error && /page range/i.test(err.message)) {
        throw new ValidationFailure([{ path: 'pageRanges', message: 'pageRanges names pages the document does not have' }]);
      }
      throw err;
    }
  });
  return inSpan('encode', { 'tintype.bytes': bytes.byteLength }, async () => bytes);
}
