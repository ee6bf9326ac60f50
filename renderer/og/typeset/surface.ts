/**
 * The card's pixels: a pureimage Bitmap (RGBA), written through its data array because per-pixel
 * method calls cost more than the whole drawing budget (a p50 of 20 ms). Everything drawn
 * is clipped to a rectangle, so a slot can never paint outside its region (spec 4.5 rules 4-5).
 */
import * as PImage from 'pureimage';
import type { Mask } from './raster.ts';
import type { RgbaImage } from './png.ts';
import { nextRun } from './row-runs.ts';

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

  /** The same pixels a word each (channels in memory order, whatever the machine's byte order). */
  private readonly words = new Uint32Array(this.pixels.buffer, this.pixels.byteOffset, CARD_WIDTH * CARD_HEIGHT);

  /**
   * Rows drawn on since the ground was painted (1 a row); every other row is the ground's. The
   * pixels change only through these methods, so the next card restores only these rows, and
   * the PNG encoder compares only these with the ground (speed: docs/performance.md).
   */
  readonly drawnRows = new Uint8Array(CARD_HEIGHT);
  private ground: Uint8Array | undefined;

  /** Replaces every pixel with a prepared ground of the same size. */
  paintGround(ground: Uint8Array): void {
    if (ground !== this.ground) {
      this.pixels.set(ground);
      this.ground = ground;
    } else {
      const row = this.width * 4;
      for (let [y0, y1] = nextRun(this.drawnRows, 0); y0 < y1; [y0, y1] = nextRun(this.drawnRows, y1)) {
        this.pixels.set(ground.subarray(y0 * row, y1 * row), y0 * row);
      }
    }
    this.drawnRows.fill(0);
    this.clippedInk = 0;
  }

  /** Blends a coverage mask in one colour at an integer offset, inside the clip. */
  fillMask(mask: Mask, dx: number, dy: number, colour: Rgb, clip: Rect): void {
    const px = this.pixels;
    const words = this.words;
    const mx = mask.left + dx;
    const my = mask.top + dy;
    const x0 = Math.max(clip.x0, mx, 0);
    const y0 = Math.max(clip.y0, my, 0);
    const x1 = Math.min(clip.x1, mx + mask.width, this.width);
    const y1 = Math.min(clip.y1, my + mask.height, this.height);
    if (x0 !== mx || y0 !== my || x1 !== mx + mask.width || y1 !== my + mask.height) {
      this.clippedInk += lostCoverage(mask.alpha, mask.width, mask.height, 1, 0, x0 - mx, y0 - my, x1 - mx, y1 - my);
    }
    if (y1 > y0) this.drawnRows.fill(1, y0, y1);
    const [r, g, b] = colour;
    // Fully covered runs take the colour, one word a pixel: the same result as the blend.
    const solid = opaqueWord(colour);
    const { alpha, rows, runs } = mask;
    for (let y = y0; y < y1; y++) {
      const row = y - my;
      const line = y * this.width + mx;
      const cover = row * mask.width;
      for (let k = rows[row]!, end = rows[row + 1]!; k < end; k += 3) {
        const from = Math.max(x0 - mx, runs[k]!);
        const to = Math.min(x1 - mx, runs[k + 1]!);
        if (runs[k + 2] === 1) {
          for (let x = from; x < to; x++) words[line + x] = solid;
          continue;
        }
        for (let x = from; x < to; x++) {
          const a = alpha[cover + x]! * COVER;
          const o = (line + x) << 2;
          px[o] = px[o]! + (r - px[o]!) * a;
          px[o + 1] = px[o + 1]! + (g - px[o + 1]!) * a;
          px[o + 2] = px[o + 2]! + (b - px[o + 2]!) * a;
        }
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
    if (y1 > y0) this.drawnRows.fill(1, y0, y1);
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
    if (y1 > y0) this.drawnRows.fill(1, y0, y1);
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

// Coverage 0-255 as a fraction (multiplied, not divided: the blend's results are kept to the bit).
const COVER = 1 / 255;

// One pixel's bytes seen as the word the pixel array holds: an opaque colour written in one store.
const pixelBytes = new Uint8Array(4);
const pixelWord = new Uint32Array(pixelBytes.buffer);

function opaqueWord(colour: Rgb): number {
  pixelBytes[0] = colour[0];
  pixelBytes[1] = colour[1];
  pixelBytes[2] = colour[2];
  pixelBytes[3] = 255;
  return pixelWord[0]!;
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
