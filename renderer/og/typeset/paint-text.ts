/**
 * Paints lines of clusters: glyph outlines (drawn by HarfBuzz from the face, harfbuzz.ts) are
 * scaled, rasterized once per face, glyph, size and quarter-pixel offset, and the coverage
 * masks are cached for the life of the worker
 * (speed: docs/performance.md); emoji are composited as images.
 */
import type { Face } from './faces.ts';
import { emojiImage } from './emoji.ts';
import { mask as maskOf, Outline, rasterize, type Mask } from './raster.ts';
import { isRtlParagraph, visualOrder, EMOJI_ADVANCE, type Cluster } from './shape.ts';
import type { Line } from './wrap.ts';
import type { Rect, Rgb, Surface } from './surface.ts';

const SUBPIXEL = 4;
// Bound on cached mask bytes per worker; the cache starts over when it is exceeded. A Latin
// card's masks take a few hundred kB, so this holds the working set of many scripts at once
// while a thread stays small (the renderer's memory bound counts these threads).
const MAX_CACHE_BYTES = 32 * 1024 * 1024;
// By face name, then by a number made of glyph, size and offset: a card looks up every glyph it
// draws, and a number key costs less than a string built for each (speed: docs/performance.md).
const masks = new Map<string, Map<number, Mask | null>>();
let cacheBytes = 0;

export function glyphMask(face: Face, id: number, size: number, sub: number): Mask | null {
  let ofFace = masks.get(face.name);
  if (ofFace === undefined) {
    ofFace = new Map();
    masks.set(face.name, ofFace);
  }
  // Glyph ids are 16-bit (OpenType); sizes are whole pixels.
  const key = (size * SUBPIXEL + sub) * 0x10000 + id;
  const hit = ofFace.get(key);
  if (hit !== undefined) return hit;
  const scale = size / face.font.unitsPerEm;
  const dx = sub / SUBPIXEL;
  const o = new Outline();
  face.font.draw(id, {
    moveTo: (x, y) => o.moveTo(dx + x * scale, -y * scale),
    lineTo: (x, y) => o.lineTo(dx + x * scale, -y * scale),
    quadTo: (x1, y1, x, y) => o.quadTo(dx + x1 * scale, -y1 * scale, dx + x * scale, -y * scale),
    cubicTo: (x1, y1, x2, y2, x, y) => o.cubicTo(dx + x1 * scale, -y1 * scale, dx + x2 * scale, -y2 * scale, dx + x * scale, -y * scale),
    close: () => o.close(),
  });
  const drawn = rasterize(o) ?? null;
  const mask = drawn !== null && face.embolden !== undefined ? widen(drawn, Math.max(1, Math.round(size * face.embolden))) : drawn;
  if (cacheBytes > MAX_CACHE_BYTES) {
    for (const m of masks.values()) m.clear();
    cacheBytes = 0;
  }
  ofFace.set(key, mask);
  cacheBytes += mask === null ? 64 : mask.alpha.length + mask.rows.byteLength + mask.runs.byteLength + 64;
  return mask;
}

/** A mask widened by `by` pixels to the right: each pixel takes the most cover of those `by` to its left. */
function widen(mask: Mask, by: number): Mask {
  const width = mask.width + by;
  const alpha = new Uint8Array(width * mask.height);
  for (let y = 0; y < mask.height; y++) {
    const row = y * mask.width;
    const out = y * width;
    for (let x = 0; x < width; x++) {
      let a = 0;
      for (let k = Math.max(0, x - by); k <= Math.min(mask.width - 1, x); k++) a = Math.max(a, mask.alpha[row + k]!);
      alpha[out + x] = a;
    }
  }
  return maskOf(mask.left, mask.top, width, mask.height, alpha);
}

/** Width of a line in pixels at a size. */
export function lineWidth(line: Line, size: number): number {
  return line.em * size;
}

/** Paints a line with its left edge at `x` and its baseline at `baseline`, clipped. */
export function paintLine(
  surface: Surface,
  line: Line,
  rtl: boolean,
  x: number,
  baseline: number,
  size: number,
  colour: Rgb,
  clip: Rect,
): void {
  let pen = x;
  const base = Math.round(baseline);
  for (const c of visualOrder(line.clusters, rtl)) {
    paintCluster(surface, c, pen, base, size, colour, clip);
    pen += c.em * size;
  }
}

function paintCluster(surface: Surface, c: Cluster, pen: number, base: number, size: number, colour: Rgb, clip: Rect): void {
  if (c.emoji !== undefined) {
    const box = Math.round(size * 1.04);
    let left = pen + size * 0.04;
    for (const file of c.emoji) {
      surface.drawImage(emojiImage(file, box), Math.round(left), base - Math.round(size * 0.86), clip);
      left += EMOJI_ADVANCE * size;
    }
    return;
  }
  if (c.face === undefined || c.glyphs === undefined) return;
  for (const { id, x, y } of c.glyphs) {
    const gx = pen + x * size;
    const ix = Math.floor(gx);
    const sub = Math.min(SUBPIXEL - 1, Math.floor((gx - ix) * SUBPIXEL));
    const mask = glyphMask(c.face, id, size, sub);
    if (mask !== null) surface.fillMask(mask, ix, base - Math.round(y * size), colour, clip);
  }
}

export { isRtlParagraph };
