/**
 * Paints lines of clusters: glyph outlines are scaled, rasterized once per face, glyph, size
 * and quarter-pixel offset, and the coverage masks are cached for the life of the worker
 * (speed: docs/performance.md); emoji are composited as images.
 */
import type { Face, OtGlyph } from './faces.ts';
import { emojiImage } from './emoji.ts';
import { Outline, rasterize, type Mask } from './raster.ts';
import { isRtlParagraph, visualOrder, EMOJI_ADVANCE, type Cluster } from './shape.ts';
import type { Line } from './wrap.ts';
import type { Rect, Rgb, Surface } from './surface.ts';

const SUBPIXEL = 4;
// Bound on cached mask bytes per worker; the cache starts over when it is exceeded. A Latin
// card's masks take a few hundred kB, so this holds the working set of many scripts at once
// while a thread stays small (the renderer's memory bound counts these threads).
const MAX_CACHE_BYTES = 32 * 1024 * 1024;
const masks = new Map<string, Mask | null>();
let cacheBytes = 0;

function glyphMask(face: Face, glyph: OtGlyph, size: number, sub: number): Mask | null {
  const key = `${face.name}|${glyph.index}|${size}|${sub}`;
  const hit = masks.get(key);
  if (hit !== undefined) return hit;
  const scale = size / face.unitsPerEm;
  const dx = sub / SUBPIXEL;
  const o = new Outline();
  for (const c of glyph.path.commands) {
    if (c.type === 'M') o.moveTo(dx + c.x * scale, -c.y * scale);
    else if (c.type === 'L') o.lineTo(dx + c.x * scale, -c.y * scale);
    else if (c.type === 'Q') o.quadTo(dx + c.x1 * scale, -c.y1 * scale, dx + c.x * scale, -c.y * scale);
    else if (c.type === 'C') o.cubicTo(dx + c.x1 * scale, -c.y1 * scale, dx + c.x2 * scale, -c.y2 * scale, dx + c.x * scale, -c.y * scale);
    else o.close();
  }
  const mask = rasterize(o) ?? null;
  if (cacheBytes > MAX_CACHE_BYTES) {
    masks.clear();
    cacheBytes = 0;
  }
  masks.set(key, mask);
  cacheBytes += (mask?.alpha.length ?? 0) + 64;
  return mask;
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
  for (const { glyph, x } of c.glyphs) {
    const gx = pen + x * size;
    const ix = Math.floor(gx);
    const sub = Math.min(SUBPIXEL - 1, Math.floor((gx - ix) * SUBPIXEL));
    const mask = glyphMask(c.face, glyph, size, sub);
    if (mask !== null) surface.fillMask(mask, ix, base, colour, clip);
  }
}

export { isRtlParagraph };
