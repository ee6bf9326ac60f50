/**
 * Where a line may break: a compact form of the Unicode line breaking algorithm (UAX #14) over
 * grapheme boundaries. Breaks come after spaces, hyphens and dashes, and around ideographs and
 * emoji; never before closing punctuation, full stops, commas, small kana or a no-break space,
 * never after opening punctuation. Thai, Lao, Khmer and Myanmar, written without spaces between
 * words, break between words found by ICU's dictionaries (`Intl.Segmenter` of Node's full ICU).
 */

type LineClass = 'SP' | 'GL' | 'ZW' | 'OP' | 'CL' | 'EX' | 'IS' | 'NS' | 'QU' | 'HY' | 'BA' | 'B2' | 'ID' | 'SA' | 'NU' | 'CM' | 'AL';

const GL = /^[\u00a0\u202f\u2007\u2011\u0f0c\u2060\ufeff]$/u;
const OPEN = /^[\p{Ps}\u00bf\u00a1]$/u;
const CLOSE = /^[\p{Pe}\u3001\u3002\uff0c\uff0e\uff1a\uff1b\u30fb\uff65\u0964\u0965]$/u;
const EXCLAIM = /^[!?\u061f\u06d4\uff01\uff1f\u203c\u2049]$/u;
const INFIX = /^[,.:;\u060c\u061b\u037e\u0589]$/u;
// Characters that may not start a line: small kana, the prolonged sound mark, iteration marks.
const NONSTARTER = /^[ぁぃぅぇぉっゃゅょゎゕゖァィゥェォッャュョヮヵヶㇰ-ㇿー々〻ゝゞヽヾ‼‽⁇⁈]$/u;
const QUOTE = /^[\p{Pi}\p{Pf}"']$/u;
const HYPHEN = /^[-\u0f0b\u2010\u2013\u00ad\u058a\u05be\u1361\u1680\u2012]$/u;
const IDEOGRAPHIC = /^[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\p{Script=Bopomofo}\p{Script=Yi}\u3000-\u303f\uff00-\uffef\p{Extended_Pictographic}]$/u;
// Scripts written without spaces between words (class SA): dictionary word boundaries.
const DICTIONARY = /^[\p{Script=Thai}\p{Script=Lao}\p{Script=Khmer}\p{Script=Myanmar}\p{Script=Tai_Tham}\p{Script=New_Tai_Lue}\p{Script=Tai_Le}\p{Script=Tai_Viet}]$/u;
const DIGIT = /^\p{Nd}$/u;
// Emoji sequences (flags, keycaps, ZWJ sequences) break like ideographs.
const EMOJI = /\p{Extended_Pictographic}|\p{Regional_Indicator}|\u20e3/u;
const MARK = /^[\p{M}\u200c\u200d\ufe00-\ufe0f]$/u;

function lineClass(ch: string): LineClass {
  if (ch === ' ' || ch === '\u3000') return ch === ' ' ? 'SP' : 'BA';
  if (ch === '\u200b') return 'ZW';
  if (ch === '\u2014') return 'B2';
  if (GL.test(ch)) return 'GL';
  if (MARK.test(ch)) return 'CM';
  if (OPEN.test(ch)) return 'OP';
  if (CLOSE.test(ch)) return 'CL';
  if (EXCLAIM.test(ch)) return 'EX';
  if (INFIX.test(ch)) return 'IS';
  if (NONSTARTER.test(ch)) return 'NS';
  if (QUOTE.test(ch)) return 'QU';
  if (HYPHEN.test(ch)) return 'HY';
  if (DIGIT.test(ch)) return 'NU';
  if (IDEOGRAPHIC.test(ch)) return 'ID';
  if (DICTIONARY.test(ch)) return 'SA';
  return 'AL';
}

const classes = new Map<string, LineClass>();

function classOf(ch: string): LineClass {
  let c = classes.get(ch);
  if (c === undefined) {
    c = lineClass(ch);
    if (classes.size < 65536) classes.set(ch, c);
  }
  return c;
}

/** Whether a line may break between a grapheme ending in class `a` and one starting with `b`. */
function mayBreak(a: LineClass, b: LineClass, dictionaryBoundary: boolean): boolean {
  if (a === 'ZW') return b !== 'SP';
  if (b === 'SP' || b === 'GL' || b === 'CL' || b === 'EX' || b === 'IS' || b === 'NS' || b === 'CM' || b === 'ZW') return false;
  if (a === 'OP' || a === 'GL') return false;
  if (a === 'SP') return true;
  if (a === 'QU' || b === 'QU') return false;
  if (a === 'HY') return b !== 'NU';
  if (a === 'BA' || a === 'B2' || b === 'B2') return !(a === 'B2' && b === 'B2');
  if (a === 'ID' || b === 'ID') return true;
  if (a === 'SA' && b === 'SA') return dictionaryBoundary;
  return false;
}

const graphemes = new Intl.Segmenter('und', { granularity: 'grapheme' });
const words = new Intl.Segmenter('und', { granularity: 'word' });

/** UTF-16 indices of `text` before which a line may break (never 0). */
export function breakOpportunities(text: string): Set<number> {
  const out = new Set<number>();
  let wordStarts: Set<number> | undefined;
  let previous: string | undefined;
  for (const g of graphemes.segment(text)) {
    const emoji = EMOJI.test(g.segment);
    const first = emoji ? '\u{1f600}' : String.fromCodePoint(g.segment.codePointAt(0)!);
    if (previous !== undefined) {
      let a = classOf(previous);
      // A mark at the very start of the text.
      if (a === 'CM') a = 'AL';
      const b = classOf(first);
      let boundary = false;
      if (a === 'SA' && b === 'SA') {
        wordStarts ??= new Set([...words.segment(text)].map((w) => w.index));
        boundary = wordStarts.has(g.index);
      }
      if (mayBreak(a, b, boundary)) out.add(g.index);
    }
    // The class of a grapheme's end: its last character that is not a mark or joiner. A
    // grapheme of marks alone (Myanmar's vowel signs are graphemes of their own) takes the class
    // of what it follows (rule LB9).
    const chars = [...g.segment];
    let last = chars[chars.length - 1]!;
    for (let k = chars.length - 1; k > 0 && MARK.test(last); k--) last = chars[k - 1]!;
    if (emoji) previous = '\u{1f600}';
    else if (previous === undefined || !MARK.test(last)) previous = last;
  }
  return out;
}
