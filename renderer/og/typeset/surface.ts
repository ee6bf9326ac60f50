/**
 * The card's pixels: a pureimage Bitmap (RGBA), written through its data array because per-pixel
 * method calls cost more than the whole drawing budget (a p50 of 20 ms). Everything drawn
 * is clipped to a rectangle, so a slot can never paint outside its region (spec 4.5 rules 4-5).
 */
import * as PImage from 'pureimage';
import type { Mask } from './raster.ts';
import type { RgbaImage } from './png.ts';

export interface Rect {
  x0: number;
  y0: number;
  x1: number;
  y1: number;
}

export type Rgb = readonly [number, number, number];

export const CARD_WIDTH = 1200;
export const CARD_HEIGHT = 630;

/** A 1200 x 630 opaque drawing surface reused from card to card in one worker. */
export class Surface {
  readonly bitmap = PImage.make(CARD_WIDTH, CARD_HEIGHT);
  readonly width = CARD_WIDTH;
  readonly height = CARD_HEIGHT;
  /**
   * Ink that a clip cut off since the ground was painted (coverage summed, 255 = one pixel).
   * Layout keeps text inside its slot; the clip is the last guard, and tests read this to see
   * that it was not needed.
   */
  clippedInk = 0;

  get pixels(): Uint8Array {
    return this.bitmap.data as Uint8Array;
  }

  /** Replaces every pixel with a prepared ground of the same size. */
  paintGround(ground: Uint8Array): void {
    this.pixels.set(ground);
    this.clippedInk = 0;
  }

  /** Blends a coverage mask in one colour at an integer offset, inside the clip. */
  fillMask(mask: Mask, dx: number, dy: number, colour: Rgb, clip: Rect, opacity = 1): void {
    const px = this.pixels;
    const x0 = Math.max(clip.x0, mask.left + dx, 0);
    const y0 = Math.max(clip.y0, mask.top + dy, 0);
    const x1 = Math.min(clip.x1, mask.left + dx + mask.width, this.width);
    const y1 = Math.min(clip.y1, mask.top + dy + mask.height, this.height);
    if (x0 !== mask.left + dx || y0 !== mask.top + dy || x1 !== mask.left + dx + mask.width || y1 !== mask.top + dy + mask.height) {
      this.clippedInk += lostCoverage(mask.alpha, mask.width, mask.height, 1, 0, x0 - mask.left - dx, y0 - mask.top - dy, x1 - mask.left - dx, y1 - mask.top - dy);
    }
    const [r, g, b] = colour;
    const scale = opacity / 255;
    for (let y = y0; y < y1; y++) {
      let m = (y - mask.top - dy) * mask.width + (x0 - mask.left - dx);
      let o = (y * this.width + x0) * 4;
      for (let x = x0; x < x1; x++, m++, o += 4) {
        const c = mask.alpha[m]!;
        if (c === 0) continue;
        // Inside a glyph (full cover, no fade) the colour replaces the pixel: the same result
        // as the blend below, without its arithmetic.
        if (c === 255 && opacity === 1) {
          px[o] = r;
          px[o + 1] = g;
          px[o + 2] = b;
          continue;
        }
        const a = c * scale;
        px[o] = px[o]! + (r - px[o]!) * a;
        px[o + 1] = px[o + 1]! + (g - px[o + 1]!) * a;
        px[o + 2] = px[o + 2]! + (b - px[o + 2]!) * a;
      }
    }
  }

  /** Fills a rectangle in one colour, inside the clip. */
  fillRect(rect: Rect, colour: Rgb, clip: Rect = rect): void {
    const px = this.pixels;
    const x0 = Math.max(Math.round(rect.x0), clip.x0, 0);
    const y0 = Math.max(Math.round(rect.y0), clip.y0, 0);
    const x1 = Math.min(Math.round(rect.x1), clip.x1, this.width);
    const y1 = Math.min(Math.round(rect.y1), clip.y1, this.height);
    for (let y = y0; y < y1; y++) {
      for (let o = (y * this.width + x0) * 4, x = x0; x < x1; x++, o += 4) {
        px[o] = colour[0];
        px[o + 1] = colour[1];
        px[o + 2] = colour[2];
      }
    }
  }

  /** Composites an RGBA image (source over) at an integer offset, inside the clip. */
  drawImage(image: RgbaImage, dx: number, dy: number, clip: Rect): void {
    const px = this.pixels;
    const src = image.data;
    const x0 = Math.max(clip.x0, dx, 0);
    const y0 = Math.max(clip.y0, dy, 0);
    const x1 = Math.min(clip.x1, dx + image.width, this.width);
    const y1 = Math.min(clip.y1, dy + image.height, this.height);
    if (x0 !== dx || y0 !== dy || x1 !== dx + image.width || y1 !== dy + image.height) {
      this.clippedInk += lostCoverage(src, image.width, image.height, 4, 3, x0 - dx, y0 - dy, x1 - dx, y1 - dy);
    }
    for (let y = y0; y < y1; y++) {
      let s = ((y - dy) * image.width + (x0 - dx)) * 4;
      let o = (y * this.width + x0) * 4;
      for (let x = x0; x < x1; x++, s += 4, o += 4) {
        const sa = src[s + 3]!;
        if (sa === 0) continue;
        const a = sa / 255;
        px[o] = px[o]! + (src[s]! - px[o]!) * a;
        px[o + 1] = px[o + 1]! + (src[s + 1]! - px[o + 1]!) * a;
        px[o + 2] = px[o + 2]! + (src[s + 2]! - px[o + 2]!) * a;
      }
    }
  }
}

// Coverage of the pixels of a w x h image outside the kept rectangle [kx0, kx1) x [ky0, ky1).
function lostCoverage(alpha: Uint8Array, w: number, h: number, step: number, offset: number, kx0: number, ky0: number, kx1: number, ky1: number): number {
  let lost = 0;
  for (let y = 0; y < h; y++) {
    const inside = y >= ky0 && y < ky1;
    for (let x = 0; x < w; x++) {
      if (inside && x >= kx0 && x < kx1) continue;
      lost += alpha[(y * w + x) * step + offset]!;
    }
  }
  return lost / 255;
}
