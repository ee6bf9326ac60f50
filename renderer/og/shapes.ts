/** Outlines of the board row's shapes: rounded cells, the ring round the question mark, arrows. */
import { Outline, rasterize, type Mask } from './typeset/raster.ts';

// Cubic Bezier handle length that approximates a quarter circle.
const K = 0.5523;

function roundedRectContour(o: Outline, x0: number, y0: number, x1: number, y1: number, r: number, reverse: boolean): void {
  const c = r * K;
  if (!reverse) {
    o.moveTo(x0 + r, y0);
    o.lineTo(x1 - r, y0);
    o.cubicTo(x1 - r + c, y0, x1, y0 + r - c, x1, y0 + r);
    o.lineTo(x1, y1 - r);
    o.cubicTo(x1, y1 - r + c, x1 - r + c, y1, x1 - r, y1);
    o.lineTo(x0 + r, y1);
    o.cubicTo(x0 + r - c, y1, x0, y1 - r + c, x0, y1 - r);
    o.lineTo(x0, y0 + r);
    o.cubicTo(x0, y0 + r - c, x0 + r - c, y0, x0 + r, y0);
  } else {
    o.moveTo(x0 + r, y0);
    o.cubicTo(x0 + r - c, y0, x0, y0 + r - c, x0, y0 + r);
    o.lineTo(x0, y1 - r);
    o.cubicTo(x0, y1 - r + c, x0 + r - c, y1, x0 + r, y1);
    o.lineTo(x1 - r, y1);
    o.cubicTo(x1 - r + c, y1, x1, y1 - r + c, x1, y1 - r);
    o.lineTo(x1, y0 + r);
    o.cubicTo(x1, y0 + r - c, x1 - r + c, y0, x1 - r, y0);
    o.lineTo(x0 + r, y0);
  }
  o.close();
}

const cache = new Map<string, Mask>();

function cached(key: string, build: (o: Outline) => void): Mask {
  let m = cache.get(key);
  if (m === undefined) {
    const o = new Outline();
    build(o);
    m = rasterize(o)!;
    cache.set(key, m);
  }
  return m;
}

/** A filled rounded rectangle. */
export function roundedRect(x0: number, y0: number, x1: number, y1: number, r: number): Mask {
  return cached(`rr|${x0}|${y0}|${x1}|${y1}|${r}`, (o) => roundedRectContour(o, x0, y0, x1, y1, r, false));
}

/** The outline of a rounded rectangle, `w` pixels wide, inside its edge. */
export function roundedRectRing(x0: number, y0: number, x1: number, y1: number, r: number, w: number): Mask {
  return cached(`rring|${x0}|${y0}|${x1}|${y1}|${r}|${w}`, (o) => {
    roundedRectContour(o, x0, y0, x1, y1, r, false);
    roundedRectContour(o, x0 + w, y0 + w, x1 - w, y1 - w, r - w, true);
  });
}

/** A ring of outer radius `r` and width `w`. */
export function ring(cx: number, cy: number, r: number, w: number): Mask {
  return roundedRectRing(cx - r, cy - r, cx + r, cy + r, r, w);
}

/** A right-pointing arrow from x0 to x1 on the line y. */
export function arrow(x0: number, x1: number, y: number, shaft: number, head: number): Mask {
  return cached(`arrow|${x0}|${x1}|${y}|${shaft}|${head}`, (o) => {
    const h = shaft / 2;
    o.moveTo(x0, y - h);
    o.lineTo(x1 - head, y - h);
    o.lineTo(x1 - head, y - head * 0.62);
    o.lineTo(x1, y);
    o.lineTo(x1 - head, y + head * 0.62);
    o.lineTo(x1 - head, y + h);
    o.lineTo(x0, y + h);
    o.close();
  });
}
