/** Pixel helpers of the OG drawing tests: where a card has ink, measured against its ground. */
import { paintPixels } from '../../../renderer/og/draw.ts';
import type { OgCard } from '../../../renderer/og/fields.ts';
import type { Rect } from '../../../renderer/og/typeset/surface.ts';
import type { Regions } from '../../../renderer/og/templates.ts';
import { ground } from '../../../renderer/og/theme.ts';

export const WIDTH = 1200;
export const HEIGHT = 630;
// A pixel has ink when a channel moved this far from the empty card's ground.
const INK_THRESHOLD = 24;

export interface Inked {
  /** 1 where the card differs from its theme's empty ground. */
  ink: Uint8Array;
  regions: Regions;
  clippedInk: number;
  pixels: Uint8Array;
}

/** Paints a card in this thread and maps its ink. */
export function inked(card: OgCard): Inked {
  const { pixels, regions, clippedInk } = paintPixels(card);
  const g = ground(card.theme);
  const ink = new Uint8Array(WIDTH * HEIGHT);
  for (let i = 0, o = 0; i < ink.length; i++, o += 4) {
    const d = Math.max(Math.abs(pixels[o]! - g[o]!), Math.abs(pixels[o + 1]! - g[o + 1]!), Math.abs(pixels[o + 2]! - g[o + 2]!));
    ink[i] = d > INK_THRESHOLD ? 1 : 0;
  }
  return { ink, regions: { ...regions }, clippedInk, pixels: pixels.slice() };
}

/** Ink pixels inside a rectangle. */
export function inkIn(ink: Uint8Array, r: Rect): number {
  let n = 0;
  for (let y = Math.max(0, r.y0); y < Math.min(HEIGHT, r.y1); y++) {
    for (let x = Math.max(0, r.x0); x < Math.min(WIDTH, r.x1); x++) n += ink[y * WIDTH + x]!;
  }
  return n;
}

/** Ink pixels outside every one of the rectangles. */
export function inkOutside(ink: Uint8Array, rects: readonly Rect[]): number {
  let n = 0;
  for (let y = 0; y < HEIGHT; y++) {
    for (let x = 0; x < WIDTH; x++) {
      if (ink[y * WIDTH + x] === 0) continue;
      if (!rects.some((r) => x >= r.x0 && x < r.x1 && y >= r.y0 && y < r.y1)) n++;
    }
  }
  return n;
}

/** Whether two rectangles share any pixel. */
export function overlaps(a: Rect, b: Rect): boolean {
  return a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1;
}

/** Whether `inner` lies within `outer`. */
export function within(inner: Rect, outer: Rect): boolean {
  return inner.x0 >= outer.x0 && inner.x1 <= outer.x1 && inner.y0 >= outer.y0 && inner.y1 <= outer.y1;
}
