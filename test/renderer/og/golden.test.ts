/**
 * Golden images of the OG card, one per template × theme (and three scripts), compared with a
 * small tolerance so a change of look is seen and decided on, not slipped in. Regenerate after
 * a deliberate change (and bump OG_DRAWING_VERSION in renderer/og/cache-key.ts):
 *   OG_UPDATE_GOLDENS=1 npx tap test/renderer/og/golden.test.ts
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import t from 'tap';
import { TEMPLATES, THEMES, type OgCard } from '../../../renderer/og/fields.ts';
import { decodePng, encodePng } from '../../../renderer/og/typeset/png.ts';
import { SCRIPTS, fullCard } from '../../../renderer/og/samples.ts';
import { inked, HEIGHT, WIDTH } from './ink.ts';

const DIR = new URL('./golden/', import.meta.url);
const UPDATE = process.env.OG_UPDATE_GOLDENS === '1';
// A pixel differs when a channel moved more than this; a card may differ in this share of
// pixels (font versions move anti-aliased edges by a level or two, not glyphs).
const CHANNEL_TOLERANCE = 48;
const MAX_DIFFERING_SHARE = 0.0003;
const MAX_DIFFERING = Math.floor(WIDTH * HEIGHT * MAX_DIFFERING_SHARE);

const cards: { name: string; card: OgCard }[] = [];
for (const template of TEMPLATES) {
  for (const theme of THEMES) cards.push({ name: `${template}-${theme}`, card: fullCard(template, theme, SCRIPTS.latin!) });
}
cards.push(
  { name: 'title-dark-arabic', card: fullCard('title', 'dark', SCRIPTS.arabic!) },
  { name: 'stat-light-cjk', card: fullCard('stat', 'light', SCRIPTS.cjk!) },
  { name: 'board-dark-emoji', card: fullCard('board', 'dark', SCRIPTS.emoji!) },
);

function differing(a: Uint8Array, b: Uint8Array): number {
  let n = 0;
  for (let i = 0; i < WIDTH * HEIGHT * 4; i += 4) {
    if (Math.abs(a[i]! - b[i]!) > CHANNEL_TOLERANCE || Math.abs(a[i + 1]! - b[i + 1]!) > CHANNEL_TOLERANCE ||
      Math.abs(a[i + 2]! - b[i + 2]!) > CHANNEL_TOLERANCE) n++;
  }
  return n;
}

for (const { name, card } of cards) {
  t.test(name, async (t) => {
    const file = new URL(`${name}.png`, DIR);
    const { pixels } = inked(card);
    if (UPDATE) {
      writeFileSync(file, encodePng(pixels, WIDTH, HEIGHT, { level: 9 }));
      t.pass(`wrote ${file.pathname}`);
      return;
    }
    t.ok(existsSync(file), `golden ${name}.png is committed`);
    const golden = decodePng(readFileSync(file));
    t.same([golden.width, golden.height], [WIDTH, HEIGHT]);
    const n = differing(pixels, golden.data);
    t.ok(n <= MAX_DIFFERING, `${n} pixels differ from the golden (at most ${MAX_DIFFERING})`);
  });
}

t.test('the comparison sees a changed card', async (t) => {
  const { pixels: a } = inked(fullCard('title', 'dark', SCRIPTS.latin!));
  const { pixels: b } = inked({ ...fullCard('title', 'dark', SCRIPTS.latin!), title: 'Faster cards for every page you share, drawn in milliseconds!' });
  t.ok(differing(a, b) > MAX_DIFFERING, 'one character more is beyond the tolerance');
});
