/**
 * Cache keys of the render operations (spec Part 8 rule 3). Each key hashes the whole
 * normalised request: defaults already applied by the schema, fields in a fixed order (so the
 * caller's JSON field order cannot matter), the page URL without its fragment (query kept),
 * HTML by its content hash, never the API key. The version and the endpoint are hashed in and
 * also lead the key, so a change of rendering can retire old entries by bumping the version.
 */
import { createHash } from 'node:crypto';
import type { HtmlToImageRequest, PdfRequest, ScreenshotRequest } from '../schemas/index.ts';
import { MARGIN_SIDES } from '../schemas/pdf.ts';

/**
 * Bump when a rendering change must not be served from entries made before it. 2: pages are
 * loaded without their fragment (entries of 1 may hold a fragment's picture) and markup is
 * hashed by its UTF-16 code units.
 */
export const RENDER_KEY_VERSION = 2;

function sha256(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

function key(endpoint: string, parts: ReadonlyArray<string | number | boolean | null>): string {
  const digest = sha256(JSON.stringify([RENDER_KEY_VERSION, endpoint, ...parts]));
  return `${endpoint}:v${RENDER_KEY_VERSION}:${digest}`;
}

/** The page URL as WHATWG serialises it, without its fragment; the query is kept. */
export function normaliseUrl(url: string): string {
  const parsed = new URL(url);
  parsed.hash = '';
  return parsed.href;
}

/**
 * Content hash of a supplied HTML document, over its UTF-16 code units (the unit the spec
 * counts `html` in). Hashed as UTF-8, every lone surrogate would become U+FFFD, and markup
 * with `\uD800` would share its entry with markup holding U+FFFD in the same place.
 */
export function htmlDigest(html: string): string {
  return createHash('sha256').update(Buffer.from(html, 'utf16le')).digest('hex');
}

/** screenshot: the URL without its fragment plus every option. */
export function screenshotKey(r: ScreenshotRequest): string {
  return key('screenshot', [
    normaliseUrl(r.url), r.width, r.height, r.fullPage, r.deviceScaleFactor, r.waitUntil,
    r.omitBackground, r.format, r.quality ?? null,
  ]);
}

/** html-to-image: content hash of `html`, then width, height, deviceScaleFactor, omitBackground, waitUntil. */
export function htmlToImageKey(r: HtmlToImageRequest): string {
  return key('html-to-image', [htmlDigest(r.html), r.width, r.height, r.deviceScaleFactor, r.omitBackground, r.waitUntil]);
}

/** pdf: every option, the four margins in fixed order, then the normalised URL or the HTML hash. */
export function pdfKey(r: PdfRequest): string {
  const margins = MARGIN_SIDES.map((side) => r.margin?.[side] ?? null);
  const source = r.url !== undefined ? ['url', normaliseUrl(r.url)] : ['html', htmlDigest(r.html ?? '')];
  return key('pdf', [
    r.format, r.landscape, r.printBackground, r.scale, ...margins, r.pageRanges ?? null, r.preferCSSPageSize,
    r.media, r.waitUntil, ...source,
  ]);
}
