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
