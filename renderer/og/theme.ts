/**
 * The two themes (spec 4.5: `dark`, the default, and `light`): colours and the ground each
 * card starts from. Grounds are painted once per worker and copied onto every card.
 */
import { CARD_HEIGHT, CARD_WIDTH, type Rgb } from './typeset/surface.ts';
import type { Theme } from './fields.ts';

export interface Palette {
  readonly top: Rgb;
  readonly bottom: Rgb;
  readonly text: Rgb;
  readonly muted: Rgb;
  readonly accent: Rgb;
  readonly onAccent: Rgb;
  readonly panel: Rgb;
  readonly rule: Rgb;
}

export const PALETTES: Readonly<Record<Theme, Palette>> = {
  dark: {
    top: [17, 24, 39],
    bottom: [11, 15, 26],
    text: [248, 250, 252],
    muted: [148, 163, 184],
    accent: [129, 140, 248],
    onAccent: [15, 23, 42],
    panel: [30, 41, 59],
    rule: [39, 51, 72],
  },
  light: {
    top: [255, 255, 255],
    bottom: [238, 242, 247],
    text: [15, 23, 42],
    muted: [71, 85, 105],
    accent: [79, 70, 229],
    onAccent: [255, 255, 255],
    panel: [226, 232, 240],
    rule: [214, 221, 232],
  },
};

/** The accent bar along the left edge and the rule above the footer (background, not slots). */
export const ACCENT_BAR = { x0: 0, y0: 0, x1: 12, y1: CARD_HEIGHT };
export const FOOTER_RULE = { x0: 80, y0: 500, x1: 1120, y1: 502 };

const grounds = new Map<Theme, Uint8Array>();

/** The card's empty ground for a theme: a soft diagonal gradient, the accent bar, the rule. */
export function ground(theme: Theme): Uint8Array {
  const hit = grounds.get(theme);
  if (hit !== undefined) return hit;
  const p = PALETTES[theme];
  const px = new Uint8Array(CARD_WIDTH * CARD_HEIGHT * 4);
  for (let y = 0; y < CARD_HEIGHT; y++) {
    for (let x = 0; x < CARD_WIDTH; x++) {
      const t = Math.min(1, Math.max(0, 0.65 * (y / CARD_HEIGHT) + 0.35 * (x / CARD_WIDTH)));
      const o = (y * CARD_WIDTH + x) * 4;
      let c: Rgb = [p.top[0] + (p.bottom[0] - p.top[0]) * t, p.top[1] + (p.bottom[1] - p.top[1]) * t, p.top[2] + (p.bottom[2] - p.top[2]) * t];
      if (x < ACCENT_BAR.x1) c = p.accent;
      else if (y >= FOOTER_RULE.y0 && y < FOOTER_RULE.y1 && x >= FOOTER_RULE.x0 && x < FOOTER_RULE.x1) c = p.rule;
      px[o] = Math.round(c[0]);
      px[o + 1] = Math.round(c[1]);
      px[o + 2] = Math.round(c[2]);
      px[o + 3] = 255;
    }
  }
  grounds.set(theme, px);
  return px;
}
