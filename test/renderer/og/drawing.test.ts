import t, { type Test } from 'tap';
import { DRAWS, TEMPLATES, THEMES, type OgCard, type TextField } from '../../../renderer/og/fields.ts';
import { parseOgQuery } from '../../../renderer/og/query.ts';
import { HOSTILE, SCRIPTS, fullCard, hostileTexts, minimalCard } from '../../../renderer/og/samples.ts';
import { FOOTER_LEFT, FOOTER_RIGHT, SAFE } from '../../../renderer/og/templates.ts';
import { paintPixels } from '../../../renderer/og/draw.ts';
import { inkIn, inkOutside, inked, overlaps, within } from './ink.ts';

// Each slot drawn must put at least this many pixels of ink in its own region.
const MIN_SLOT_INK = 30;

// The slot a supplied field is drawn in (spec 4.5 rule 5: on board a hint takes the footer slot).
function drawnSlots(card: OgCard): TextField[] {
  const fields = DRAWS[card.template].filter((f) => card[f] !== undefined);
  return card.template === 'board' && card.hint !== undefined ? fields.filter((f) => f !== 'footer') : fields;
}

/** The checks every card must pass, whatever its text. */
function checkCard(t: Test, card: OgCard, name: string): void {
  const { ink, regions, clippedInk } = inked(card);
  const slots = drawnSlots(card);
  const names = Object.keys(regions);
  for (const slot of slots) {
    const region = regions[slot];
    if (region === undefined) {
      t.fail(`${name}: ${slot} has a region`);
      continue;
    }
    t.ok(inkIn(ink, region) >= MIN_SLOT_INK, `${name}: ${slot} has ink in its region`);
  }
  const extra = names.filter((n) => !slots.includes(n as TextField) && n !== 'row');
  t.same(extra, [], `${name}: no region for a slot not supplied`);
  for (const [n, r] of Object.entries(regions)) t.ok(within(r, SAFE), `${name}: ${n} inside the card margins`);
  for (let i = 0; i < names.length; i++) {
    for (let j = i + 1; j < names.length; j++) {
      t.notOk(overlaps(regions[names[i]!]!, regions[names[j]!]!), `${name}: ${names[i]} and ${names[j]} do not overlap`);
    }
  }
  t.equal(inkOutside(ink, Object.values(regions)), 0, `${name}: no ink outside the supplied slots`);
  t.equal(clippedInk, 0, `${name}: all text fits its slot; nothing was cut by a clip`);
  const leftSlot = card.template === 'board' && card.hint !== undefined ? 'hint' : 'footer';
  if (card[leftSlot] === undefined && card.footer === undefined) t.equal(inkIn(ink, FOOTER_LEFT), 0, `${name}: empty left footer slot`);
  if (card.brand === undefined) t.equal(inkIn(ink, FOOTER_RIGHT), 0, `${name}: empty right footer slot`);
}

// Hostile text goes through the query validation first, so every card is one a caller could ask for.
function hostileCard(template: OgCard['template'], text: string): OgCard {
  const texts = hostileTexts(text);
  const query = new URLSearchParams({ template });
  for (const field of DRAWS[template]) query.set(field, texts[field]);
  return parseOgQuery(query);
}

t.test('every template × theme × script: slots have ink in their own regions, nothing outside', async (t) => {
  for (const template of TEMPLATES) {
    for (const theme of THEMES) {
      for (const [script, texts] of Object.entries(SCRIPTS)) {
        checkCard(t, fullCard(template, theme, texts), `${template}/${theme}/${script}`);
      }
    }
  }
});

t.test('empty slots stay empty: required fields only', async (t) => {
  for (const template of TEMPLATES) {
    for (const theme of THEMES) {
      const card = minimalCard(template, theme, SCRIPTS.latin!);
      checkCard(t, card, `${template}/${theme}/minimal`);
      const { ink } = inked(card);
      t.equal(inkIn(ink, FOOTER_LEFT) + inkIn(ink, FOOTER_RIGHT), 0, `${template}/${theme}: no service branding in the footer`);
    }
  }
});

t.test('footer and brand fill the left and right slots; on board a hint takes the left one', async (t) => {
  const latin = SCRIPTS.latin!;
  const footerOnly = inked({ template: 'title', theme: 'dark', title: 'T', footer: latin.footer });
  t.ok(inkIn(footerOnly.ink, FOOTER_LEFT) >= MIN_SLOT_INK, 'footer in the left slot');
  t.equal(inkIn(footerOnly.ink, FOOTER_RIGHT), 0, 'right slot empty');
  const brandOnly = inked({ template: 'title', theme: 'dark', title: 'T', brand: latin.brand });
  t.ok(inkIn(brandOnly.ink, FOOTER_RIGHT) >= MIN_SLOT_INK, 'brand in the right slot');
  t.equal(inkIn(brandOnly.ink, FOOTER_LEFT), 0, 'left slot empty');

  const board = { template: 'board', theme: 'dark', title: 'T', start: 'a', target: 'b' } as const;
  const hinted = inked({ ...board, hint: latin.hint });
  const both = inked({ ...board, hint: latin.hint, footer: latin.footer });
  t.ok(inkIn(hinted.ink, FOOTER_LEFT) >= MIN_SLOT_INK, 'the hint is drawn in the left footer slot');
  t.same(Buffer.from(both.pixels), Buffer.from(hinted.pixels), 'with a hint, the footer is not drawn over it');
  const footed = inked({ ...board, footer: latin.footer });
  t.ok(inkIn(footed.ink, FOOTER_LEFT) >= MIN_SLOT_INK, 'without a hint the footer has the slot');
  t.notSame(Buffer.from(footed.pixels), Buffer.from(hinted.pixels));
});

t.test('the board row: start cell, arrow, question mark, arrow, target cell', async (t) => {
  const { ink, regions } = inked({ template: 'board', theme: 'light', title: 'T', start: 'e2', target: 'e4' });
  const row = regions.row!;
  const start = regions.start!;
  const target = regions.target!;
  t.ok(start.x1 <= row.x0 && row.x1 <= target.x0, 'start, then the arrows and ring, then target, left to right');
  t.ok(regions.title!.y1 <= row.y0, 'the row sits under the title');
  // Three marks between the cells: arrow, ring with its question mark, arrow.
  const mid = Math.round((row.y0 + row.y1) / 2);
  let runs = 0;
  let inRun = false;
  for (let x = row.x0 + 4; x < row.x1 - 4; x++) {
    const on = ink[mid * 1200 + x] === 1;
    if (on && !inRun) runs++;
    inRun = on;
  }
  t.ok(runs >= 3, `arrow, ring and arrow cross the row's middle line (${runs} runs of ink)`);
});

t.test('hostile text never throws, overflows or overlaps another slot', async (t) => {
  for (const template of TEMPLATES) {
    for (const [name, text] of Object.entries(HOSTILE)) {
      checkCard(t, hostileCard(template, text), `${template}/${name}`);
    }
  }
});

t.test('the hostile set covers every hostile kind samples.ts names', async (t) => {
  const cps = (s: string) => [...s].map((c) => c.codePointAt(0)!);
  t.equal([...HOSTILE.wide120!].length, 120, '120 wide characters');
  t.equal([...HOSTILE.narrow120!].length, 120, '120 narrow characters');
  t.notMatch(HOSTILE.word120!, /\s/, 'one unbroken word');
  t.equal([...HOSTILE.word120!].length, 120);
  t.ok(cps(HOSTILE.emoji120!).length === 120 && cps(HOSTILE.emoji120!).every((c) => c > 0xffff), '120 emoji above U+FFFF');
  t.match(HOSTILE.zwj!, /\u200d/, 'zero-width joiners');
  t.match(HOSTILE.combining!, /\p{M}/u, 'combining marks');
  t.match(HOSTILE.rtlMixed!, /[\u0590-\u05ff]/u, 'right-to-left text');
  t.ok(cps(HOSTILE.astral!).some((c) => c > 0xffff && c < 0x1f000), 'non-emoji code points above U+FFFF');
});

t.test('longer text shrinks, then wraps to its line limit, then ends in an ellipsis', async (t) => {
  const short = inked({ template: 'title', theme: 'dark', title: 'Short' });
  const long = inked({ template: 'title', theme: 'dark', title: 'W'.repeat(120) });
  const h = (r: { y0: number; y1: number }) => r.y1 - r.y0;
  t.ok(h(long.regions.title!) > h(short.regions.title!), 'a long title takes more lines');
  t.ok(long.regions.title!.y1 <= 476 + 8, 'but stays above the footer');
  t.equal(long.clippedInk, 0);
});

t.test('a card drawn after others has the pixels it has drawn first: the reused surface keeps nothing of them', async (t) => {
  // The surface restores only the rows the cards before drew on (typeset/surface.ts).
  const card = fullCard('title', 'dark', SCRIPTS.latin!);
  paintPixels(fullCard('title', 'light', SCRIPTS.latin!)); // another ground: every row replaced
  const fresh = paintPixels(card).pixels.slice();
  const before: [string, OgCard[]][] = [
    ['the same card', [card]],
    ['another template on the same ground', [fullCard('board', 'dark', SCRIPTS.emoji!)]],
    ['a title wider and taller on the same ground', [fullCard('stat', 'dark', SCRIPTS.cjk!), { ...card, title: HOSTILE.wideLatin120! }]],
    ['cards on the other ground between', [fullCard('board', 'light', SCRIPTS.arabic!), fullCard('stat', 'dark', SCRIPTS.latin!)]],
  ];
  for (const [name, cards] of before) {
    for (const c of cards) paintPixels(c);
    t.ok(Buffer.from(paintPixels(card).pixels).equals(Buffer.from(fresh)), `after ${name}`);
  }
});
