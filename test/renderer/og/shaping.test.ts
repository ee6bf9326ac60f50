/**
 * Shaping of the hard cases, compared with `hb-shape` (Debian's libharfbuzz-bin, an independent
 * build of the engine) on the same face: glyph ids and advances of the card's own shaping
 * (shape.ts through harfbuzz.ts, as a card draws them) must be what hb-shape gives. The glyph
 * names hb-shape gives are kept here as goldens, read by eye when written: one conjunct glyph
 * for क्ष, a reph, the i-matra before its consonant, split vowel signs around theirs, Khmer
 * subscripts, Myanmar medials, Sinhala, the lam-alef ligature.
 */
import { execFileSync } from 'node:child_process';
import t from 'tap';
import { shape, visualOrder, isRtlParagraph } from '../../../renderer/og/typeset/shape.ts';

const NOTO = '/usr/share/fonts/truetype/noto';

// [what it shows, text, face the card draws it with, glyph names hb-shape gives]
const CASES: [string, string, string, string][] = [
  ['Devanagari conjunct kṣa and the i-matra before tra', 'क्षत्रिय', 'NotoSansDevanagari-Regular', 'kassadeva ivowelsign03deva taradeva yadeva'],
  ['Devanagari reph', 'कार्ड', 'NotoSansDevanagari-Regular', 'kadeva aavowelsigndeva ddadeva rephdeva'],
  ['Devanagari conjunct ṣṭha under a vowel sign', 'पृष्ठ', 'NotoSansDevanagari-Regular', 'padeva rvocalicvowelsigndeva ssatthadeva'],
  ['Devanagari nukta and a ra conjunct', 'ब्राउज़र', 'NotoSansDevanagari-Regular', ''],
  ['Bengali split vowel sign o', 'কো', 'NotoSansBengali-Regular', 'evowelsigninibeng kabeng aavowelsignbeng'],
  ['Tamil split vowel sign o', 'கொ', 'NotoSansTamil-Regular', 'evowelsigntamil katamil aavowelsigntamil'],
  ['Malayalam split vowel sign o', 'കൊ', 'NotoSansMalayalam-Regular', 'evowelsignmlym kamlym aavowelsignmlym'],
  ['Khmer subscript and pre-base vowel', 'ខ្មែរ', 'NotoSansKhmer-Regular', 'uni17C2 uni1781 uni17D21798 uni179A'],
  ['Myanmar medial ra before its consonant', 'မြန်', 'NotoSansMyanmar-Regular', 'medial_ra ma na asat'],
  ['Sinhala ra with ZWJ (śrī)', 'ශ්‍රී', 'NotoSansSinhala-Regular', 'shiivowelsinh sharasinh'],
  ['Telugu vowel signs', 'తెలుగు', 'NotoSansTelugu-Regular', 'tevoweltelu latelu uvowelsigntelu gatelu uvowelsigntelu'],
  ['Kannada subscript na', 'ಕನ್ನಡ', 'NotoSansKannada-Regular', 'kaknda naknda nasubscriptknda ddaknda'],
  ['Gujarati', 'ગુજરાતી', 'NotoSansGujarati-Regular', ''],
  ['Arabic lam-alef ligatures and joining', 'لا سلام', 'NotoSansArabic-Regular', 'uni0645 uniFEFC uniFEB3 space uniFEFB'],
];

interface HbGlyph { g: number | string; cl: number; ax: number; dx: number; dy: number }

function hbShape(face: string, text: string, names: boolean): HbGlyph[] {
  const args = ['--output-format=json', `--font-file=${NOTO}/${face}.ttf`, `--text=${text}`];
  if (!names) args.push('--no-glyph-names');
  return JSON.parse(execFileSync('hb-shape', args, { encoding: 'utf8' })) as HbGlyph[];
}

for (const [what, text, face, golden] of CASES) {
  t.test(what, async (t) => {
    const clusters = shape(text, 'regular');
    t.same([...new Set(clusters.filter((c) => !c.space).map((c) => c.face?.name))], [face], `drawn with ${face}`);
    // The card's glyphs left to right as they are painted, placed in font units from the start.
    let pen = 0;
    const ours = visualOrder(clusters, isRtlParagraph(clusters)).flatMap((c) => {
      const upem = c.face!.font.unitsPerEm;
      const placed = c.glyphs!.map((g) => ({ id: g.id, x: Math.round((pen + g.x) * upem), y: Math.round(g.y * upem) }));
      pen += c.em;
      return placed;
    });
    const theirs = hbShape(face, text, false);
    t.same(ours.map((g) => g.id), theirs.map((g) => g.g), 'glyph ids as hb-shape gives them');
    let x = 0;
    const positions = theirs.map((g) => {
      const at = { x: x + g.dx, y: g.dy };
      x += g.ax;
      return at;
    });
    t.same(ours.map((g) => ({ x: g.x, y: g.y })), positions, 'glyph positions (advances and mark offsets) as hb-shape gives them');
    if (golden !== '') t.equal(hbShape(face, text, true).map((g) => g.g).join(' '), golden, 'the golden glyph sequence');
  });
}

t.test('a run of Arabic joins across a change of face only where the faces allow it, and every letter has a glyph', async (t) => {
  const clusters = shape('مرحبا بالعالم', 'bold');
  t.ok(clusters.every((c) => c.glyphs!.every((g) => g.id !== 0)), 'no empty box');
  t.equal(clusters[0]!.face!.name, 'NotoSansArabic-Bold', 'bold where the template draws bold');
});
