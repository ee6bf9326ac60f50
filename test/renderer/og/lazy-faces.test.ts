/**
 * Faces are read on first need (memory): a Latin card reads no fallback face,
 * a CJK card reads the CJK face when it is drawn, and the lazy reader maps code points and builds
 * outlines exactly as opentype.js's whole-font parse does (so the drawing is unchanged).
 * This file runs in its own process, so the faces start unread.
 */
import { createRequire } from 'node:module';
import t from 'tap';
import { faces } from '../../../renderer/og/typeset/faces.ts';
import { paintPixels, warmUp } from '../../../renderer/og/draw.ts';
import { SCRIPTS, fullCard } from '../../../renderer/og/samples.ts';
import { LazyTrueType, type OtGlyph } from '../../../renderer/og/typeset/truetype.ts';

interface FullFont {
  numGlyphs: number;
  glyphs: { get(i: number): OtGlyph };
  tables: { cmap: { glyphIndexMap: Record<number, number> } };
}
const fromPureimage = createRequire(createRequire(import.meta.url).resolve('pureimage'));
const opentype = fromPureimage('opentype.js') as { loadSync(file: string): FullFont };

const read = () => Object.fromEntries(faces().all().filter((f) => f.stage !== 'none').map((f) => [f.name, f.stage]));

t.test('warm-up reads the primary faces only; a Latin card reads no fallback', async (t) => {
  t.same(read(), {}, 'nothing is read before the first use');
  warmUp();
  t.same(read(), { 'NotoSans-Bold': 'outlines', 'NotoSans-Regular': 'outlines', 'NotoSansMono-Bold': 'outlines' });
  for (const template of ['title', 'stat', 'board'] as const) paintPixels(fullCard(template, 'dark', SCRIPTS.latin!));
  t.same(read(), { 'NotoSans-Bold': 'outlines', 'NotoSans-Regular': 'outlines', 'NotoSansMono-Bold': 'outlines' });
});

t.test('the first CJK card reads the CJK face and draws with it', async (t) => {
  const cjk = faces().all().find((f) => f.name === 'DroidSansFallbackFull')!;
  t.equal(cjk.stage, 'none');
  const { regions } = paintPixels(fullCard('title', 'dark', SCRIPTS.cjk!));
  t.ok(regions.title, 'the title was drawn');
  t.equal(cjk.stage, 'outlines', 'the CJK face was read for it');
  t.equal(cjk.glyph(0x6f22), cjk.glyph(0x6f22), 'a glyph is built once and kept');
});

t.test('the lazy reader maps and outlines every face as opentype.js does', async (t) => {
  for (const face of faces().all()) {
    const full = opentype.loadSync(face.file);
    const lazy = new LazyTrueType(face.file);
    const map = full.tables.cmap.glyphIndexMap;
    const wrong: number[] = [];
    for (let cp = 0; cp <= 0xffff; cp++) if (lazy.glyphIndex(cp) !== (map[cp] ?? 0)) wrong.push(cp);
    t.same(wrong.slice(0, 5), [], `${face.name}: every BMP code point maps to the same glyph`);
    t.equal(lazy.glyphIndex(0x1f600), 0, `${face.name}: no code point above U+FFFF is mapped (BMP cmap only)`);
    // About 300 glyphs of each face, composites included, and the last one.
    const step = Math.max(1, Math.floor(full.numGlyphs / 300));
    const differ: number[] = [];
    const sample = [full.numGlyphs - 1];
    for (let i = 0; i < full.numGlyphs; i += step) sample.push(i);
    for (const i of sample) {
      const a = full.glyphs.get(i);
      const b = lazy.glyphAt(i);
      const same = a.advanceWidth === b.advanceWidth && b.index === i &&
        JSON.stringify(a.path.commands) === JSON.stringify(b.path.commands) && a.yMin === b.yMin && a.yMax === b.yMax;
      if (!same) differ.push(i);
    }
    t.same(differ, [], `${face.name}: sampled glyphs have the same advance, box and outline`);
    t.equal(lazy.glyphAt(full.numGlyphs + 10).index, 0, `${face.name}: an index past the last glyph is .notdef`);
  }
});
