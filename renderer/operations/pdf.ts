/** POST /v1/pdf (spec 4.4): a URL or markup to PDF, laid out in a 1280 × 800 viewport first. */
import type { CDPSession } from 'puppeteer-core';
import { parsePDFOptions } from 'puppeteer-core/internal/common/util.js';
import { ServiceError, ValidationFailure } from '../../lib/errors.ts';
import type { PdfRequest } from '../schemas/index.ts';
import { capture, navigate, writeMarkup } from './page-work.ts';
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

/** Resolves in the page once its fonts are loaded (puppeteer's `waitForFonts`, on by default). */
const FONTS_READY = 'document.fonts.ready.then(() => true)';

/** Chromium's PDF of the tab over raw CDP, asked for as puppeteer's createPDFStream asks, read as it streams. */
async function rawPdf(ctx: RenderContext, req: PdfRequest, maxBytes: number): Promise<Buffer> {
  const { session } = ctx.cdp;
  const o = parsePDFOptions({
    format: req.format, landscape: req.landscape, printBackground: req.printBackground, scale: req.scale,
    ...(req.margin !== undefined ? { margin: { ...req.margin } } : {}),
    ...(req.pageRanges !== undefined ? { pageRanges: req.pageRanges } : {}),
    preferCSSPageSize: req.preferCSSPageSize,
  });
  await session.send('Runtime.evaluate', { expression: FONTS_READY, awaitPromise: true });
  const { stream } = await session.send('Page.printToPDF', {
    transferMode: 'ReturnAsStream', landscape: o.landscape, displayHeaderFooter: o.displayHeaderFooter,
    headerTemplate: o.headerTemplate, footerTemplate: o.footerTemplate, printBackground: o.printBackground, scale: o.scale,
    paperWidth: o.width, paperHeight: o.height, marginTop: o.margin.top, marginBottom: o.margin.bottom,
    marginLeft: o.margin.left, marginRight: o.margin.right, pageRanges: o.pageRanges, preferCSSPageSize: o.preferCSSPageSize,
    generateTaggedPDF: o.tagged, generateDocumentOutline: o.outline,
  });
  if (stream === undefined) throw new ServiceError('render_failed');
  return readBounded(protocolStream(session, stream), maxBytes);
}

/** A PDF stream handle read with IO.read, closed at its end. */
function protocolStream(session: CDPSession, handle: string): ReadableStream<Uint8Array> {
  return new ReadableStream({
    async pull(controller) {
      const { data, base64Encoded, eof } = await session.send('IO.read', { handle });
      controller.enqueue(Buffer.from(data, base64Encoded === true ? 'base64' : 'utf8'));
      if (eof) {
        await session.send('IO.close', { handle });
        controller.close();
      }
    },
    async cancel() {
      await session.send('IO.close', { handle }).catch(() => undefined);
    },
  });
}

/** The page work of pdf, on the prepared tab (renderer/browser/prepared-page.ts): a URL is loaded under the navigation rules through the tab's puppeteer Page, markup written over raw CDP; the print is raw CDP either way. */
export async function pdfWork(ctx: RenderContext, req: PdfRequest, deadline: number, maxBytes: number): Promise<Buffer> {
  const { cdp } = ctx;
  await cdp.setViewport({ ...PDF_VIEWPORT, deviceScaleFactor: 1 });
  // Chromium prints with print media already; only `screen` needs emulating.
  if (req.media === 'screen') await cdp.emulateScreenMedia();
  if (req.url !== undefined) await navigate(ctx, req.url, req.waitUntil, deadline);
  else await writeMarkup(ctx, req.html ?? '', req.waitUntil, deadline);
  const bytes = await capture({ 'tintype.format': req.format, 'tintype.landscape': req.landscape }, async () => {
    try {
      return await rawPdf(ctx, req, maxBytes);
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
