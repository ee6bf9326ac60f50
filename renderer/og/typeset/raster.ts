/**
 * Anti-aliased coverage rasterizer: outlines are flattened to line segments and their signed
 * area is accumulated per pixel (non-zero fill of non-overlapping contours). pureimage's own
 * text fill closes and fills every contour on its own, which fills the counters of letters
 * such as "o" and anti-aliases horizontally only, so outlines are rasterized here into masks
 * that are cached and composited onto pureimage's bitmap.
 */

/** A coverage mask (0-255) placed at (left, top) in card pixels. */
export interface Mask {
  left: number;
  top: number;
  width: number;
  height: number;
  alpha: Uint8Array;
  /**
   * The covered pixels as runs, row by row: runs `rows[y]` to `rows[y + 1]` (three numbers a
   * run: first column, end column, 1 when every pixel of it is fully covered), so compositing
   * skips empty pixels and fills covered ones without testing each (speed: docs/performance.md).
   */
  rows: Int32Array;
  runs: Int32Array;
}

/** A mask of a coverage array, with its runs. */
export function mask(left: number, top: number, width: number, height: number, alpha: Uint8Array): Mask {
  const rows = new Int32Array(height + 1);
  const runs: number[] = [];
  for (let y = 0; y < height; y++) {
    rows[y] = runs.length;
    const line = y * width;
    for (let x = 0; x < width; ) {
      const c = alpha[line + x]!;
      if (c === 0) {
        x++;
        continue;
      }
      const full = c === 255;
      let end = x + 1;
      while (end < width && alpha[line + end] !== 0 && (alpha[line + end] === 255) === full) end++;
      runs.push(x, end, full ? 1 : 0);
      x = end;
    }
  }
  rows[height] = runs.length;
  return { left, top, width, height, alpha, rows, runs: Int32Array.from(runs) };
}

/** Collects an outline as line segments in pixel coordinates. */
export class Outline {
  readonly segments: number[] = [];
  private sx = 0;
  private sy = 0;
  private cx = 0;
  private cy = 0;
  minX = Infinity;
  minY = Infinity;
  maxX = -Infinity;
  maxY = -Infinity;

  moveTo(x: number, y: number): void {
    this.close();
    this.sx = this.cx = x;
    this.sy = this.cy = y;
  }

  lineTo(x: number, y: number): void {
    const s = this.segments;
    s.push(this.cx, this.cy, x, y);
    if (x < this.minX) this.minX = x;
    if (x > this.maxX) this.maxX = x;
    if (y < this.minY) this.minY = y;
    if (y > this.maxY) this.maxY = y;
    if (this.cx < this.minX) this.minX = this.cx;
    if (this.cx > this.maxX) this.maxX = this.cx;
    if (this.cy < this.minY) this.minY = this.cy;
    if (this.cy > this.maxY) this.maxY = this.cy;
    this.cx = x;
    this.cy = y;
  }

  quadTo(x1: number, y1: number, x: number, y: number): void {
    const dd = Math.hypot(this.cx - 2 * x1 + x, this.cy - 2 * y1 + y);
    const n = Math.max(1, Math.min(32, Math.ceil(Math.sqrt(dd * 2))));
    const x0 = this.cx;
    const y0 = this.cy;
    for (let i = 1; i <= n; i++) {
      const t = i / n;
      const u = 1 - t;
      this.lineTo(u * u * x0 + 2 * u * t * x1 + t * t * x, u * u * y0 + 2 * u * t * y1 + t * t * y);
    }
  }

  cubicTo(x1: number, y1: number, x2: number, y2: number, x: number, y: number): void {
    const dd = Math.max(Math.hypot(this.cx - 2 * x1 + x2, this.cy - 2 * y1 + y2), Math.hypot(x1 - 2 * x2 + x, y1 - 2 * y2 + y));
    const n = Math.max(1, Math.min(48, Math.ceil(Math.sqrt(dd * 3))));
    const x0 = this.cx;
    const y0 = this.cy;
    for (let i = 1; i <= n; i++) {
      const t = i / n;
      const u = 1 - t;
      const a = u * u * u;
      const b = 3 * u * u * t;
      const c = 3 * u * t * t;
      const d = t * t * t;
      this.lineTo(a * x0 + b * x1 + c * x2 + d * x, a * y0 + b * y1 + c * y2 + d * y);
    }
  }

  close(): void {
    if (this.cx !== this.sx || this.cy !== this.sy) this.lineTo(this.sx, this.sy);
  }
}

/** Rasterizes an outline into a coverage mask covering its bounding box. */
export function rasterize(outline: Outline): Mask | undefined {
  outline.close();
  if (outline.segments.length === 0 || !(outline.maxX > outline.minX) || !(outline.maxY > outline.minY)) return undefined;
  const left = Math.floor(outline.minX);
  const top = Math.floor(outline.minY);
  const width = Math.ceil(outline.maxX) - left + 1;
  const height = Math.ceil(outline.maxY) - top + 1;
  const stride = width + 2;
  const acc = new Float32Array(stride * height + 2);
  const s = outline.segments;
  for (let i = 0; i < s.length; i += 4) {
    accumulateLine(acc, stride, height, s[i]! - left, s[i + 1]! - top, s[i + 2]! - left, s[i + 3]! - top);
  }
  const alpha = new Uint8Array(width * height);
  for (let y = 0; y < height; y++) {
    let sum = 0;
    const row = y * stride;
    for (let x = 0; x < width; x++) {
      sum += acc[row + x]!;
      const a = Math.abs(sum);
      alpha[y * width + x] = a >= 1 ? 255 : (a * 255 + 0.5) | 0;
    }
  }
  return mask(left, top, width, height, alpha);
}

// Adds the signed area a segment covers to each pixel it crosses; a row's running sum is the
// coverage. Coordinates are relative to the mask and never negative.
function accumulateLine(acc: Float32Array, stride: number, height: number, x0: number, y0: number, x1: number, y1: number): void {
  if (y0 === y1) return;
  let dir = 1;
  if (y0 > y1) {
    dir = -1;
    [x0, x1] = [x1, x0];
    [y0, y1] = [y1, y0];
  }
  const dxdy = (x1 - x0) / (y1 - y0);
  let x = x0;
  if (y0 < 0) {
    x -= y0 * dxdy;
    y0 = 0;
  }
  const yStart = Math.floor(y0);
  const yEnd = Math.min(height, Math.ceil(y1));
  for (let y = yStart; y < yEnd; y++) {
    const line = y * stride;
    const dy = Math.min(y + 1, y1) - Math.max(y, y0);
    const xNext = x + dxdy * dy;
    const d = dy * dir;
    const xa = x < xNext ? x : xNext;
    const xb = x < xNext ? xNext : x;
    const xaFloor = Math.floor(xa);
    const xai = xaFloor;
    const xbCeil = Math.ceil(xb);
    const xbi = xbCeil;
    if (xbi <= xai + 1) {
      const xmf = 0.5 * (x + xNext) - xaFloor;
      acc[line + xai]! += d - d * xmf;
      acc[line + xai + 1]! += d * xmf;
    } else {
      const inv = 1 / (xb - xa);
      const xaf = xa - xaFloor;
      const a0 = 0.5 * inv * (1 - xaf) * (1 - xaf);
      const xbf = xb - xbCeil + 1;
      const am = 0.5 * inv * xbf * xbf;
      acc[line + xai]! += d * a0;
      if (xbi === xai + 2) {
        acc[line + xai + 1]! += d * (1 - a0 - am);
      } else {
        const a1 = inv * (1.5 - xaf);
        acc[line + xai + 1]! += d * (a1 - a0);
        for (let xi = xai + 2; xi < xbi - 1; xi++) acc[line + xi]! += d * inv;
        const a2 = a1 + (xbi - xai - 3) * inv;
        acc[line + xbi - 1]! += d * (1 - a2 - am);
      }
      acc[line + xbi]! += d * am;
    }
    x = xNext;
  }
}
