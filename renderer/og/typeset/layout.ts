/**
 * Stacking text blocks in a box (spec 4.5 rule 4): all blocks start at
 * their largest size and shrink together, step by step, until every block fits its line limit
 * and the stack fits the box; below the smallest size text is cut with an ellipsis. Each block
 * paints only inside its own region, so nothing overflows or overlaps another slot.
 */
import type { Role } from './faces.ts';
import { paintLine } from './paint-text.ts';
import { paragraphDirection, shape, type Cluster } from './shape.ts';
import type { Rect, Rgb, Surface } from './surface.ts';
import { wrap, type Line } from './wrap.ts';

export interface BlockSpec {
  readonly slot: string;
  readonly text: string;
  readonly role: Role;
  /** Sizes in pixels, largest first. */
  readonly sizes: readonly number[];
  readonly maxLines: (size: number) => number;
  /** Line height as a multiple of the size. */
  readonly leading: number;
  readonly colour: Rgb;
  /** Space above the block when another block precedes it. */
  readonly gapBefore: number;
  readonly align?: 'start' | 'center' | 'end';
}

export interface PlacedBlock {
  readonly spec: BlockSpec;
  readonly size: number;
  readonly lines: Line[];
  readonly rtl: boolean;
  /** Top of the first line box. */
  readonly top: number;
  readonly region: Rect;
}

// Ink above the first line box and below the last stays inside the block's region.
const BLEED = 6;

interface Trial {
  spec: BlockSpec;
  clusters: readonly Cluster[];
  size: number;
  lines: Line[];
  truncated: boolean;
  /** Ink of the first line above its line box, and of the last line below it, in pixels. */
  over: number;
  under: number;
  height: number;
}

// Ink beyond the line box that layout makes room for; anything taller (stacks of combining
// marks) is cut by the slot's clip rather than pushing every other slot away.
const MAX_EXTENT_EM = 0.5;

function baselineOffset(size: number, leading: number): number {
  return (size * leading - size) / 2 + 0.8 * size;
}

// Sets a trial's height from its lines and the real ink extents of the faces drawn in it, so a
// deep Arabic descender or a stacked Vietnamese accent gets room instead of being clipped.
function measure(t: Trial): Trial {
  const lh = t.size * t.spec.leading;
  const above = baselineOffset(t.size, t.spec.leading);
  const first = t.lines[0];
  const last = t.lines[t.lines.length - 1];
  const cap = MAX_EXTENT_EM * t.size;
  t.over = first === undefined ? 0 : Math.min(cap, Math.max(0, lineAscent(first) * t.size - above));
  t.under = last === undefined ? 0 : Math.min(cap, Math.max(0, lineDescent(last) * t.size - (lh - above)));
  t.height = t.lines.length * lh + t.over + t.under;
  return t;
}

function lineAscent(line: Line): number {
  let a = 0;
  for (const c of line.clusters) if (c.ascent > a) a = c.ascent;
  return a;
}

function lineDescent(line: Line): number {
  let d = 0;
  for (const c of line.clusters) if (c.descent > d) d = c.descent;
  return d;
}

// Blocks shrink in proportion: step k of n takes each block the same fraction down its sizes.
function trial(spec: BlockSpec, clusters: readonly Cluster[], step: number, steps: number, width: number): Trial {
  const last = spec.sizes.length - 1;
  const size = spec.sizes[steps <= 1 ? 0 : Math.round((step * last) / (steps - 1))]!;
  const w = wrap(clusters, width / size, spec.maxLines(size), spec.role);
  return measure({ spec, clusters, size, lines: w.lines, truncated: w.truncated, over: 0, under: 0, height: 0 });
}

function totalHeight(trials: readonly Trial[]): number {
  return trials.reduce((h, t, i) => h + t.height + (i > 0 ? t.spec.gapBefore : 0), 0);
}

/** Fits blocks top-down into `box` and returns where each one goes. */
export function stack(specs: readonly BlockSpec[], box: Rect): PlacedBlock[] {
  const width = box.x1 - box.x0;
  const shaped = specs.map((s) => shape(s.text, s.role));
  const steps = Math.max(...specs.map((s) => s.sizes.length));
  let chosen: Trial[] = [];
  for (let step = 0; step < steps; step++) {
    chosen = specs.map((s, i) => trial(s, shaped[i]!, step, steps, width));
    if (chosen.every((t) => !t.truncated) && totalHeight(chosen) <= box.y1 - box.y0) break;
  }
  // Still too tall at the smallest sizes: take lines off the tallest block, with an ellipsis.
  while (totalHeight(chosen) > box.y1 - box.y0) {
    const tallest = chosen.reduce((a, b) => (b.lines.length > a.lines.length ? b : a));
    if (tallest.lines.length <= 1) break;
    const w = wrap(tallest.clusters, width / tallest.size, tallest.lines.length - 1, tallest.spec.role);
    tallest.lines = w.lines;
    measure(tallest);
  }
  // A block with no strong character ("99%", an emoji) follows the direction of the stack's
  // text, so a figure on a Hebrew card lines up with the Hebrew under it.
  const stackDirection = shaped.map(paragraphDirection).find((d) => d !== undefined) ?? 'L';
  let y = box.y0;
  let previousBottom = -Infinity;
  return chosen.map((t, i) => {
    if (i > 0) y += t.spec.gapBefore;
    const top = y + t.over;
    y += t.height;
    const gapAfter = chosen[i + 1]?.spec.gapBefore ?? BLEED * 2;
    const bleedBefore = i === 0 ? BLEED : Math.min(BLEED, t.spec.gapBefore / 2);
    const region: Rect = {
      x0: box.x0 - 8,
      x1: box.x1 + 8,
      // Whole pixels, and never above the block before: regions of a stack never share a row.
      y0: Math.max(previousBottom, Math.floor(top - t.over - bleedBefore)),
      y1: Math.ceil(y + Math.min(BLEED, gapAfter / 2)),
    };
    previousBottom = region.y1;
    return { spec: t.spec, size: t.size, lines: t.lines, rtl: (paragraphDirection(t.clusters) ?? stackDirection) === 'R', top, region };
  });
}

/** Places one block in a fixed region (single-purpose slots such as the footer). */
export function place(spec: BlockSpec, box: Rect): PlacedBlock {
  return stack([spec], box)[0]!;
}

/** Places one block centred vertically in `box`; the region is the box itself. */
export function placeMiddle(spec: BlockSpec, box: Rect, inset: number): PlacedBlock {
  const inner = { x0: box.x0 + inset, x1: box.x1 - inset, y0: box.y0, y1: box.y1 };
  const fitted = stack([spec], inner)[0]!;
  const height = fitted.lines.length * fitted.size * spec.leading;
  const top = (box.y0 + box.y1) / 2 - height / 2;
  return { ...fitted, top, region: { ...box, x0: box.x0 + inset - 8, x1: box.x1 - inset + 8 } };
}

/** Paints a placed block: lines aligned to the paragraph's start edge unless told otherwise. */
export function paintBlock(surface: Surface, block: PlacedBlock): void {
  const { spec, size, region } = block;
  const x0 = region.x0 + 8;
  const x1 = region.x1 - 8;
  const lineHeight = size * spec.leading;
  const top = block.top;
  block.lines.forEach((line, i) => {
    const width = line.em * size;
    const align = spec.align ?? (block.rtl ? 'end' : 'start');
    const x = align === 'start' ? x0 : align === 'end' ? x1 - width : x0 + (x1 - x0 - width) / 2;
    const baseline = top + i * lineHeight + (lineHeight - size) / 2 + 0.8 * size;
    paintLine(surface, line, block.rtl, x, baseline, size, spec.colour, region);
  });
}
