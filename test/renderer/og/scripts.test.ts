/**
 * Every script that has a Noto face (all of the Basic Multilingual Plane's, many above) draws its letters, not
 * empty boxes (spec 4.5 rule 6): per script, a title card is drawn and each of its clusters is
 * rasterized as the card rasterizes it; a cluster whose pixels are the face's empty box
 * (.notdef) fails when the script's face has glyphs for it. Scripts with a sample sentence
 * (renderer/og/samples.ts) use it; the others use letters of the script the face maps.
 */
import { existsSync } from 'node:fs';
import t from 'tap';
import { HbFont } from '../../../renderer/og/typeset/harfbuzz.ts';
import { glyphMask } from '../../../renderer/og/typeset/paint-text.ts';
import { SCRIPT_NAMES, scriptOf } from '../../../renderer/og/typeset/scripts.ts';
import { shape } from '../../../renderer/og/typeset/shape.ts';
import { SCRIPTS, WORLD } from '../../../renderer/og/samples.ts';
import { inked, inkIn } from './ink.ts';

const SIZE = 48;
const SAMPLE: Record<string, string> = {
  Latin: SCRIPTS.latin!.title, Cyrillic: SCRIPTS.cyrillic!.title, Greek: SCRIPTS.greek!.title,
  Arabic: SCRIPTS.arabic!.title, Hebrew: SCRIPTS.hebrew!.title, Devanagari: SCRIPTS.devanagari!.title,
  Thai: SCRIPTS.thai!.title, Han: '共有する世界', Hiragana: 'すべてのページに', Katakana: 'カタカナ',
  Bengali: WORLD.bengali!, Gurmukhi: WORLD.gurmukhi!, Gujarati: WORLD.gujarati!, Oriya: WORLD.oriya!,
  Tamil: WORLD.tamil!, Telugu: WORLD.telugu!, Kannada: WORLD.kannada!, Malayalam: WORLD.malayalam!,
  Sinhala: WORLD.sinhala!, Khmer: WORLD.khmer!, Lao: WORLD.lao!, Myanmar: WORLD.myanmar!,
  Tibetan: WORLD.tibetan!, Georgian: WORLD.georgian!, Armenian: WORLD.armenian!, Ethiopic: WORLD.ethiopic!,
  Hangul: WORLD.hangul!, Syriac: WORLD.syriac!, Thaana: WORLD.thaana!, Cherokee: WORLD.cherokee!,
};

const NOTO = '/usr/share/fonts/truetype/noto';
const FILES: Record<string, string> = {
  Latin: `${NOTO}/NotoSans-Regular.ttf`, Greek: `${NOTO}/NotoSans-Regular.ttf`, Cyrillic: `${NOTO}/NotoSans-Regular.ttf`,
  Han: '/usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf', Hiragana: '/usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf',
  Katakana: '/usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf', Hangul: '/usr/share/fonts/truetype/nanum/NanumGothic.ttf',
  Nko: `${NOTO}/NotoSansNKo-Regular.ttf`,
};

/** The installed file with the script's glyphs, found here independently of faces.ts. */
function fileOf(script: string): string | undefined {
  const family = script.replaceAll('_', '');
  return [FILES[script], `${NOTO}/NotoSans${family}-Regular.ttf`, `${NOTO}/NotoSerif${family}-Regular.ttf`]
    .find((f) => f !== undefined && existsSync(f));
}

// Letters of each script, in code point order (up to 64 each), for scripts without a sample.
const LETTERS = new Map<string, string[]>();
for (let cp = 0x80; cp < 0x20000; cp++) {
  if (cp >= 0xd800 && cp < 0xe000) continue;
  const ch = String.fromCodePoint(cp);
  if (!/^\p{L}$/u.test(ch)) continue;
  const list = LETTERS.get(scriptOf(cp)) ?? [];
  if (list.length < 64) LETTERS.set(scriptOf(cp), [...list, ch]);
}

/** Up to 16 letters of a script that its face maps. */
function letters(script: string, face: HbFont): string {
  return (LETTERS.get(script) ?? []).filter((ch) => face.covers(ch.codePointAt(0)!)).slice(0, 16).join('');
}

const same = (a: Uint8Array, b: Uint8Array) => a.length === b.length && a.every((v, i) => v === b[i]);

const drawable = SCRIPT_NAMES.filter((s) => fileOf(s) !== undefined && (SAMPLE[s] !== undefined || letters(s, new HbFont(fileOf(s)!)) !== ''));

t.test('the scripts checked include every BMP script Noto covers and historic ones above it', async (t) => {
  t.ok(drawable.length >= 120, `${drawable.length} scripts`);
  for (const s of ['Telugu', 'Gujarati', 'Kannada', 'Khmer', 'Sinhala', 'Myanmar', 'Lao', 'Tibetan', 'Ethiopic']) t.ok((drawable as readonly string[]).includes(s), s);
});

for (const script of drawable) {
  t.test(`${script}: letters draw as glyphs, not empty boxes`, async (t) => {
    const face = new HbFont(fileOf(script)!);
    const text = SAMPLE[script] ?? letters(script, face);
    t.ok([...text].length > 0, 'a sample to draw');
    const { ink, regions, clippedInk } = inked({ template: 'title', theme: 'dark', title: text });
    t.ok(inkIn(ink, regions.title!) > 100, 'the title has ink');
    t.equal(clippedInk, 0, 'the title fits its slot');
    const boxes: string[] = [];
    for (const c of shape(text, 'regular')) {
      if (c.space || c.face === undefined) continue;
      const cps = [...c.text].map((ch) => ch.codePointAt(0)!).filter((cp) => scriptOf(cp) === script);
      // Only letters the script's face has glyphs for.
      if (cps.length === 0 || !cps.every((cp) => face.covers(cp))) continue;
      const box = glyphMask(c.face, 0, SIZE, 0);
      for (const g of c.glyphs!) {
        const mask = glyphMask(c.face, g.id, SIZE, 0);
        if (mask !== null && box !== null && same(mask.alpha, box.alpha) && mask.width === box.width) boxes.push(c.text);
      }
    }
    t.same(boxes, [], 'no cluster is drawn as the empty box');
  });
}
