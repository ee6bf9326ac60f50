import { execFileSync } from 'node:child_process';
import { openSync, readSync, closeSync, readFileSync } from 'node:fs';
import t from 'tap';
import { faces, type Role } from '../../../renderer/og/typeset/faces.ts';
import { shape } from '../../../renderer/og/typeset/shape.ts';
import { glyphMask } from '../../../renderer/og/typeset/paint-text.ts';

const APT_LIST = new URL('../../../scripts/apt-packages.txt', import.meta.url);

function magic(file: string): string {
  const fd = openSync(file, 'r');
  try {
    const b = Buffer.alloc(4);
    readSync(fd, b, 0, 4, 0);
    return b.toString('hex');
  } finally {
    closeSync(fd);
  }
}

t.test('every face is a TrueType file from a Debian package the setup installs', async (t) => {
  const listed = readFileSync(APT_LIST, 'utf8').split('\n').map((l) => l.trim()).filter((l) => l !== '' && !l.startsWith('#'));
  const all = faces().all();
  t.ok(all.length >= 8, 'the sans, the monospace face and the fallbacks are loaded');
  // One dpkg-query for every file: "package: path" per line.
  const owners = new Map(execFileSync('dpkg-query', ['-S', ...all.map((f) => f.file)], { encoding: 'utf8' })
    .trim().split('\n').map((l) => [l.slice(l.indexOf(': ') + 2), l.slice(0, l.indexOf(':'))]));
  for (const face of all) {
    // 00010000 is a TrueType (glyf) font; 'OTTO' (CFF), 'wOFF' and 'wOF2' are refused.
    t.equal(magic(face.file), '00010000', `${face.name} has TrueType outlines`);
    t.ok(face.file.startsWith('/usr/share/fonts/truetype/'), `${face.name} is an installed system font, not a fetched one`);
    const owner = owners.get(face.file);
    t.ok(owner !== undefined && listed.includes(owner), `${face.name} comes from ${owner}, listed in scripts/apt-packages.txt`);
  }
});

// The faces a text is drawn with, and the graphemes drawn as the empty box (.notdef, glyph 0).
function facesOf(text: string, role: Role): { names: string[]; boxes: string[] } {
  const names = new Set<string>();
  const boxes: string[] = [];
  for (const c of shape(text, role)) {
    if (c.space || c.face === undefined) continue;
    if (c.glyphs!.some((g) => g.id === 0)) boxes.push(c.text);
    names.add(c.face.name);
  }
  return { names: [...names], boxes };
}

t.test('each script is drawn by the face spec 4.5 rule 6 gives it, with no empty boxes', async (t) => {
  const rows: [string, string, Role, string[]][] = [
    ['Latin in the bundled sans', 'Façade naïve Œuvre ÆØÅ ẞß', 'bold', ['NotoSans-Bold']],
    ['Latin, regular', 'Façade naïve', 'regular', ['NotoSans-Regular']],
    ['Cyrillic in the bundled sans', 'Съешь же ещё этих булок', 'bold', ['NotoSans-Bold']],
    ['Greek in the bundled sans', 'Ξεσκεπάζω την ψυχοφθόρα', 'regular', ['NotoSans-Regular']],
    ['Arabic in a fallback', 'مرحبا بالعالم', 'bold', ['NotoSansArabic-Bold']],
    ['Hebrew in a fallback', 'שלום עולם', 'regular', ['NotoSansHebrew-Regular']],
    ['Devanagari in a fallback', 'नमस्ते दुनिया', 'bold', ['NotoSansDevanagari-Bold']],
    ['Thai in a fallback', 'สวัสดีชาวโลก', 'regular', ['NotoSansThai-Regular']],
    ['CJK in a fallback (bold: widened)', '你好世界こんにちはカタカナ', 'bold', ['DroidSansFallbackFull-SyntheticBold']],
    ['CJK, regular', '你好世界', 'regular', ['DroidSansFallbackFull']],
    ['Hangul in a fallback', '안녕하세요 세계', 'bold', ['NanumGothicBold']],
    ['Hangul, regular', '한국어', 'regular', ['NanumGothic']],
    ['statValue, start, target in the monospace face', '98.6% e2-e4 +1,024', 'mono', ['NotoSansMono-Bold']],
    ['the monospace face carries pi', 'π', 'mono', ['NotoSansMono-Bold']],
    ['other Greek in a monospace slot uses a fallback', 'λ', 'mono', ['NotoSans-Bold']],
    ['Cyrillic in a monospace slot', 'Ж', 'mono', ['NotoSansMono-Bold']],
  ];
  for (const [name, text, role, want] of rows) t.same(facesOf(text, role), { names: want, boxes: [] }, name);
});

t.test('widths are measured with the face each grapheme is drawn with', async (t) => {
  const [latin] = shape('a', 'bold');
  const [han] = shape('漢', 'bold');
  t.equal(latin!.face!.name, 'NotoSans-Bold');
  t.equal(han!.face!.name, 'DroidSansFallbackFull-SyntheticBold');
  t.ok(han!.em > 0.9 && han!.em <= 1.05, 'a Han character is about one em wide in its own face');
  t.ok(latin!.em < 0.7, 'a Latin letter is narrower');
  const mixed = shape('a漢', 'bold');
  t.equal(mixed[0]!.em + mixed[1]!.em, latin!.em + han!.em, 'a line is the sum of its graphemes in their faces');
});

t.test('emoji are images, one per sequence, including ZWJ, skin tones, flags and keycaps', async (t) => {
  const rows: [string, number][] = [
    ['😀', 1], ['👩\u200d💻', 1], ['👨\u200d👩\u200d👧\u200d👦', 1], ['👍🏽', 1], ['🇯🇵', 1], ['1\ufe0f\u20e3', 1], ['🏳\ufe0f\u200d🌈', 1], ['❤\ufe0f', 1],
  ];
  for (const [text, files] of rows) {
    const clusters = shape(text, 'bold');
    t.equal(clusters.length, 1, `${text} is one grapheme`);
    t.equal(clusters[0]!.emoji?.length, files, `${text} is drawn from ${files} image`);
  }
  t.equal(shape('#', 'bold')[0]!.emoji, undefined, 'a plain # stays text');
  t.equal(shape('©', 'regular')[0]!.emoji, undefined, 'text-presentation symbols stay text');
});

t.test('CJK in a bold slot is drawn heavier than in a regular one (synthetic bold)', async (t) => {
  const ink = (role: Role) => {
    const [c] = shape('漢', role);
    const mask = glyphMask(c!.face!, c!.glyphs![0]!.id, 76, 0)!;
    return mask.alpha.reduce((a, b) => a + b, 0);
  };
  const bold = ink('bold');
  const regular = ink('regular');
  t.ok(bold > regular * 1.15, `bold ink ${bold} is well above regular ink ${regular}`);
});
