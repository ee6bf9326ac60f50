import t from 'tap';
import { shape, visualOrder, isRtlParagraph } from '../../../renderer/og/typeset/shape.ts';
import { wrap } from '../../../renderer/og/typeset/wrap.ts';

function visual(text: string): string {
  const clusters = shape(text, 'regular');
  return visualOrder(clusters, isRtlParagraph(clusters)).map((c) => c.text).join('');
}

t.test('bidirectional order of a line', async (t) => {
  t.equal(visual('abc def'), 'abc def', 'left to right unchanged');
  t.equal(visual('אבג דהו'), 'והד גבא', 'right to left reversed');
  t.equal(visual('abc אבג דהו xyz'), 'abc והד גבא xyz', 'an RTL run inside LTR text');
  t.equal(visual('אבג 123 דהו'), 'והד 123 גבא', 'numbers keep their order in RTL text');
  t.equal(visual('אבג 98.6% דהו'), 'והד 98.6% גבא', 'a decimal point and percent sign stay with the number');
  t.equal(visual('אבג (דהו)'), '(והד) גבא', 'brackets mirror in RTL text');
});

t.test('wrapping: words, long words and the ellipsis', async (t) => {
  const lines = (text: string, maxEm: number, maxLines: number) =>
    wrap(shape(text, 'regular'), maxEm, maxLines, 'regular');
  const words = lines('one two three four five six', 5, 10);
  t.ok(words.lines.length > 1 && words.lines.every((l) => l.em <= 5), 'lines break between words within the width');
  t.notOk(words.truncated);
  const long = lines('x'.repeat(200), 5, 3);
  t.equal(long.lines.length, 3, 'a word longer than a line breaks between graphemes, up to the limit');
  t.ok(long.truncated);
  t.ok(long.lines.every((l) => l.em <= 5), 'every line fits, the ellipsis included');
  t.equal(long.lines[2]!.clusters.at(-1)!.text, '…', 'the last line ends in an ellipsis');
  const cjk = lines('共有するすべてのページに', 4, 10);
  t.ok(cjk.lines.length > 1 && cjk.lines.every((l) => l.em <= 4), 'text without spaces breaks between words');
});

t.test('line breaks follow the Unicode line breaking rules, with dictionaries for Thai, Lao, Khmer, Myanmar', async (t) => {
  const { breakOpportunities } = await import('../../../renderer/og/typeset/breaks.ts');
  // The text cut at every break opportunity.
  const pieces = (text: string) => {
    const at = [0, ...[...breakOpportunities(text)].sort((a, b) => a - b), text.length];
    return at.slice(1).map((end, k) => text.slice(at[k], end));
  };
  t.same(pieces('one two'), ['one ', 'two'], 'after a space');
  t.same(pieces('well-known'), ['well-', 'known'], 'after a hyphen');
  t.same(pieces('a 1,000.5 b'), ['a ', '1,000.5 ', 'b'], 'never inside a number');
  t.same(pieces('10\u00a0km'), ['10\u00a0km'], 'never at a no-break space');
  t.same(pieces('(quoted) text!'), ['(quoted) ', 'text!'], 'never after an opening bracket or before a closing one or !');
  t.same(pieces('漢字。かな、カナ'), ['漢', '字。', 'か', 'な、', 'カ', 'ナ'], 'between ideographs, never before 。 or 、');
  t.same(pieces('ちょっと'), ['ちょっ', 'と'], 'never before a small kana');
  t.same(pieces('การ์ดที่รวดเร็ว'), ['การ์ด', 'ที่', 'รวดเร็ว'], 'Thai between dictionary words, not inside them');
  t.same(pieces('ភាសាខ្មែរគឺជា'), ['ភាសាខ្មែរ', 'គឺជា'], 'Khmer between dictionary words');
  t.same(pieces('ພາສາລາວ'), ['ພາສາ', 'ລາວ'], 'Lao between dictionary words');
  t.same(pieces('မြန်မာဘာသာစကား'), ['မြန်မာဘာသာ', 'စကား'], 'Myanmar between dictionary words');
  t.same(pieces('नमस्ते दुनिया'), ['नमस्ते ', 'दुनिया'], 'Devanagari only at spaces: a conjunct is never split');
  t.same(pieces('go 🚀🎉 now'), ['go ', '🚀', '🎉 ', 'now'], 'around emoji');
});
