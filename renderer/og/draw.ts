/**
 * Draws one card to PNG bytes, synchronously (run inside a worker thread, see pool.ts). The
 * surface and every cache live for the life of the thread.
 */
import type { OgCard } from './fields.ts';
import { encodePng } from './typeset/png.ts';
import { Surface } from './typeset/surface.ts';
import { paintCard, type Regions } from './templates.ts';
import { ground } from './theme.ts';
import { faces } from './typeset/faces.ts';
import { TEMPLATES } from './fields.ts';
import { SCRIPTS, fullCard } from './samples.ts';

let surface: Surface | undefined;

/**
 * Reads the primary faces, grounds and the emoji index, and draws one card per template, so a
 * thread's first Latin card costs what every other does (compiled code, common glyph masks in
 * the cache). Fallback faces are not read here: each is read when a card first needs it (faces.ts).
 */
export function warmUp(): void {
  for (const role of ['bold', 'regular', 'mono'] as const) faces().primary(role).font.shape('A', 0, 1, 'ltr');
  surface ??= new Surface();
  ground('dark');
  ground('light');
  for (const template of TEMPLATES) drawCard(fullCard(template, 'dark', SCRIPTS.emoji!));
  for (const template of TEMPLATES) drawCard(fullCard(template, 'light', SCRIPTS.latin!));
}

/**
 * Paints a card and returns its RGBA pixels (a view valid until the next card), the region of
 * each slot drawn, how much ink the slot clips cut off (tests: text must fit without them), and
 * the rows drawn on (the others are the ground's).
 */
export function paintPixels(card: OgCard): { pixels: Uint8Array; regions: Regions; clippedInk: number; drawnRows: Uint8Array } {
  surface ??= new Surface();
  surface.paintGround(ground(card.theme));
  const regions = paintCard(surface, card);
  return { pixels: surface.pixels, regions, clippedInk: surface.clippedInk, drawnRows: surface.drawnRows };
}

/** Draws a card as a 1200 x 630 PNG. */
export function drawCard(card: OgCard): Buffer {
  const { pixels, drawnRows } = paintPixels(card);
  return encodePng(pixels, 1200, 630, { ground: ground(card.theme), drawnRows });
}
