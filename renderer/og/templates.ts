/**
 * The three templates (spec 4.5 rules 4-5). Each lays out its slots, paints them, and returns
 * the region of every slot it drew, so tests can check ink slot by slot.
 *   title: optional kicker above the headline, optional subtitle under it.
 *   stat:  optional kicker, the large statValue, statLabel under it, then the title.
 *   board: title and optional subtitle, then the row start cell, arrow, question mark, arrow,
 *          target cell; the hint is the line under the row, in the left footer slot.
 * Every template: footer in the left footer slot, brand in the right one; unsupplied slots stay
 * empty and nothing else is added (no service branding).
 */
import type { OgCard } from './fields.ts';
import { paintBlock, place, placeMiddle, stack, type BlockSpec } from './typeset/layout.ts';
import { arrow, ring, roundedRect, roundedRectRing } from './shapes.ts';
import type { Rect, Surface } from './typeset/surface.ts';
import { PALETTES, type Palette } from './theme.ts';
import { sizes } from './typeset/wrap.ts';

/** Slot regions drawn on a card, by slot name; `row` holds the board's arrows and ring. */
export type Regions = Record<string, Rect>;

/** Where content may go; nothing but the ground is drawn outside it. */
export const CONTENT = { x0: 80, y0: 64, x1: 1120, y1: 476 } as const;
/** Ink from any slot stays inside this rectangle (content plus bleed of glyph edges). */
export const SAFE = { x0: 72, y0: 56, x1: 1128, y1: 576 } as const;
export const FOOTER_LEFT = { x0: 80, y0: 524, x1: 700, y1: 566 } as const;
export const FOOTER_RIGHT = { x0: 740, y0: 524, x1: 1120, y1: 566 } as const;

const FULL = { x0: 0, y0: 0, x1: 1200, y1: 630 };

function kickerSpec(text: string, p: Palette): BlockSpec {
  return { slot: 'kicker', text, role: 'bold', sizes: sizes(26, 20, 2), maxLines: () => 1, leading: 1.3, colour: p.accent, gapBefore: 0 };
}

function paintStack(surface: Surface, specs: BlockSpec[], box: Rect, regions: Regions): Rect {
  const placed = stack(specs, box);
  let bottom = box.y0;
  for (const b of placed) {
    paintBlock(surface, b);
    regions[b.spec.slot] = b.region;
    bottom = b.region.y1;
  }
  return { ...box, y0: bottom };
}

function paintFooter(surface: Surface, p: Palette, left: { slot: string; text: string } | undefined, brand: string | undefined, regions: Regions): void {
  if (left !== undefined) {
    // The left slot's text keeps to the left edge whatever its direction (spec 4.5 rule 5).
    const b = place({ slot: left.slot, text: left.text, role: 'regular', sizes: sizes(26, 18, 2), maxLines: () => 1, leading: 1.4, colour: p.muted, gapBefore: 0, align: 'start' }, FOOTER_LEFT);
    paintBlock(surface, b);
    regions[left.slot] = b.region;
  }
  if (brand !== undefined) {
    const b = place({ slot: 'brand', text: brand, role: 'bold', sizes: sizes(26, 18, 2), maxLines: () => 1, leading: 1.4, colour: p.text, gapBefore: 0, align: 'end' }, FOOTER_RIGHT);
    paintBlock(surface, b);
    regions.brand = b.region;
  }
}

function drawTitle(surface: Surface, card: OgCard, p: Palette, regions: Regions): void {
  const specs: BlockSpec[] = [];
  if (card.kicker !== undefined) specs.push(kickerSpec(card.kicker, p));
  specs.push({ slot: 'title', text: card.title, role: 'bold', sizes: sizes(76, 44, 4), maxLines: (s) => (s >= 56 ? 3 : 4), leading: 1.14, colour: p.text, gapBefore: 20 });
  if (card.subtitle !== undefined) {
    specs.push({ slot: 'subtitle', text: card.subtitle, role: 'regular', sizes: sizes(34, 24, 2), maxLines: (s) => (s >= 30 ? 2 : 3), leading: 1.32, colour: p.muted, gapBefore: 22 });
  }
  paintStack(surface, specs, CONTENT, regions);
  paintFooter(surface, p, card.footer === undefined ? undefined : { slot: 'footer', text: card.footer }, card.brand, regions);
}

function drawStat(surface: Surface, card: OgCard, p: Palette, regions: Regions): void {
  const specs: BlockSpec[] = [];
  if (card.kicker !== undefined) specs.push(kickerSpec(card.kicker, p));
  specs.push(
    { slot: 'statValue', text: card.statValue ?? '', role: 'mono', sizes: sizes(156, 96, 6), maxLines: () => 1, leading: 1.08, colour: p.accent, gapBefore: 14 },
    { slot: 'statLabel', text: card.statLabel ?? '', role: 'regular', sizes: sizes(34, 24, 2), maxLines: (s) => (s >= 30 ? 1 : 2), leading: 1.3, colour: p.muted, gapBefore: 4 },
    { slot: 'title', text: card.title, role: 'bold', sizes: sizes(52, 34, 2), maxLines: (s) => (s >= 44 ? 2 : 3), leading: 1.14, colour: p.text, gapBefore: 26 },
  );
  paintStack(surface, specs, CONTENT, regions);
  paintFooter(surface, p, card.footer === undefined ? undefined : { slot: 'footer', text: card.footer }, card.brand, regions);
}

// The board row: two cells, two arrows and the ring with its question mark, across the content.
const ROW = { y0: 318, y1: 446 };
const START_CELL = { x0: 80, y0: ROW.y0, x1: 460, y1: ROW.y1 };
const TARGET_CELL = { x0: 740, y0: ROW.y0, x1: 1120, y1: ROW.y1 };
const RING = { cx: 600, cy: (ROW.y0 + ROW.y1) / 2, r: 46 };

function drawBoard(surface: Surface, card: OgCard, p: Palette, regions: Regions): void {
  const specs: BlockSpec[] = [
    { slot: 'title', text: card.title, role: 'bold', sizes: sizes(56, 36, 2), maxLines: (s) => (s >= 44 ? 2 : 3), leading: 1.14, colour: p.text, gapBefore: 0 },
  ];
  if (card.subtitle !== undefined) {
    specs.push({ slot: 'subtitle', text: card.subtitle, role: 'regular', sizes: sizes(30, 22, 2), maxLines: () => 2, leading: 1.3, colour: p.muted, gapBefore: 16 });
  }
  paintStack(surface, specs, { ...CONTENT, y1: ROW.y0 - 28 }, regions);

  const { x0, y0, x1, y1 } = START_CELL;
  surface.fillMask(roundedRect(x0, y0, x1, y1, 22), 0, 0, p.panel, FULL);
  surface.fillMask(roundedRectRing(x0, y0, x1, y1, 22, 3), 0, 0, p.accent, FULL);
  surface.fillMask(roundedRect(TARGET_CELL.x0, TARGET_CELL.y0, TARGET_CELL.x1, TARGET_CELL.y1, 22), 0, 0, p.accent, FULL);
  const cy = RING.cy;
  surface.fillMask(arrow(478, 538, cy, 6, 22), 0, 0, p.muted, FULL);
  surface.fillMask(arrow(662, 722, cy, 6, 22), 0, 0, p.muted, FULL);
  surface.fillMask(ring(RING.cx, cy, RING.r, 5), 0, 0, p.accent, FULL);
  const cell = (slot: string, text: string, colour: Palette['text']): BlockSpec =>
    ({ slot, text, role: 'mono', sizes: sizes(60, 24, 4), maxLines: () => 1, leading: 1.2, colour, gapBefore: 0, align: 'center' });
  const start = placeMiddle(cell('start', card.start ?? '', p.text), START_CELL, 28);
  const target = placeMiddle(cell('target', card.target ?? '', p.onAccent), TARGET_CELL, 28);
  const question = placeMiddle({ ...cell('question', '?', p.accent), role: 'bold', sizes: [52] }, { x0: RING.cx - RING.r, y0: RING.cy - RING.r, x1: RING.cx + RING.r, y1: RING.cy + RING.r }, 10);
  for (const b of [start, target, question]) paintBlock(surface, b);
  regions.start = START_CELL;
  regions.target = TARGET_CELL;
  regions.row = { x0: START_CELL.x1, y0: ROW.y0, x1: TARGET_CELL.x0, y1: ROW.y1 };

  // Spec 4.5 rule 5: on board a supplied hint takes the left footer slot (the line under the row).
  const left = card.hint !== undefined ? { slot: 'hint', text: card.hint } : card.footer !== undefined ? { slot: 'footer', text: card.footer } : undefined;
  paintFooter(surface, p, left, card.brand, regions);
}

/** Paints a card's slots onto a surface that already holds the theme's ground. */
export function paintCard(surface: Surface, card: OgCard): Regions {
  const regions: Regions = {};
  const p = PALETTES[card.theme];
  if (card.template === 'title') drawTitle(surface, card, p, regions);
  else if (card.template === 'stat') drawStat(surface, card, p, regions);
  else drawBoard(surface, card, p, regions);
  return regions;
}
