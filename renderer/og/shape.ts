/**
 * Text into clusters: one per grapheme, each drawn with the first face of its role's chain
 * that has glyphs for it, or as a colour emoji image. Widths are measured with the face each
 * cluster is actually drawn with (issue 4), in em so they scale with the font size.
 */
import { emojiFiles } from './emoji.ts';
import { faces, type Face, type OtGlyph, type Role } from './faces.ts';

/** Bidirectional class of a cluster: left-to-right, right-to-left, number, neutral. */
export type BidiClass = 'L' | 'R' | 'EN' | 'N';

export interface Cluster {
  readonly text: string;
  /** Advance in em. */
  readonly em: number;
  readonly face?: Face;
  /** Glyphs with their offset from the cluster's start, in em. */
  readonly glyphs?: readonly { glyph: OtGlyph; x: number }[];
  /** Emoji image files drawn side by side. */
  readonly emoji?: readonly string[];
  readonly space: boolean;
  /** Whether a line may start at this cluster. */
  readonly breakBefore: boolean;
  readonly bidi: BidiClass;
}

/** Advance of one emoji image in em. */
export const EMOJI_ADVANCE = 1.12;

// Scripts written without spaces between words: a line may break between any two words.
const NO_SPACES = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Thai}\p{Script=Lao}\p{Script=Khmer}\p{Script=Myanmar}\u3000-\u303f\uff00-\uffef]/u;
const RTL = /[\p{Script=Hebrew}\p{Script=Arabic}\p{Script=Syriac}\p{Script=Thaana}\p{Script=Nko}]/u;
const DIGIT = /^\p{Nd}/u;
const LETTER = /^[\p{L}\p{M}]/u;
// Default-ignorable characters that draw nothing: ZWSP, ZWNJ, ZWJ, word joiner, variation selectors.
const INVISIBLE = /^[\u200b-\u200d\u2060\ufe00-\ufe0f\u{e0100}-\u{e01ef}\u{e0020}-\u{e007f}]$/u;

const graphemes = new Intl.Segmenter('und', { granularity: 'grapheme' });
const words = new Intl.Segmenter('und', { granularity: 'word' });

function bidiOf(text: string): BidiClass {
  if (RTL.test(text[0] ?? '')) return 'R';
  const first = String.fromCodePoint(text.codePointAt(0) ?? 32);
  if (RTL.test(first)) return 'R';
  if (DIGIT.test(text)) return 'EN';
  if (LETTER.test(text)) return 'L';
  return 'N';
}

function pickFace(chain: readonly Face[], cps: readonly number[]): Face {
  const visible = cps.filter((cp) => !INVISIBLE.test(String.fromCodePoint(cp)));
  if (visible.length === 0) return chain[0]!;
  const all = chain.find((f) => visible.every((cp) => f.covers(cp)));
  if (all !== undefined) return all;
  return chain.find((f) => f.covers(visible[0]!)) ?? chain[0]!;
}

/** Shapes cleaned text for a role into clusters, with break opportunities marked. */
export function shape(text: string, role: Role): Cluster[] {
  const chain = faces().chain(role);
  const wordStarts = new Set<number>();
  const breakAfterWord = new Set<number>();
  for (const w of words.segment(text)) {
    wordStarts.add(w.index);
    if (NO_SPACES.test(w.segment)) {
      breakAfterWord.add(w.index);
      breakAfterWord.add(w.index + w.segment.length);
    }
  }
  const clusters: Cluster[] = [];
  let previousSpace = false;
  for (const g of graphemes.segment(text)) {
    const t = g.segment;
    const space = t === ' ';
    const breakBefore =
      clusters.length === 0 || (!space && (previousSpace || (wordStarts.has(g.index) && breakAfterWord.has(g.index))));
    previousSpace = space;
    const files = emojiFiles(t);
    if (files !== undefined) {
      clusters.push({ text: t, em: EMOJI_ADVANCE * files.length, emoji: files, space, breakBefore, bidi: 'N' });
      continue;
    }
    const cps = [...t].map((c) => c.codePointAt(0)!);
    const face = pickFace(chain, cps);
    const glyphs: { glyph: OtGlyph; x: number }[] = [];
    let x = 0;
    for (const cp of cps) {
      if (INVISIBLE.test(String.fromCodePoint(cp))) continue;
      const glyph = face.glyph(cp);
      glyphs.push({ glyph, x });
      x += (glyph.advanceWidth ?? 0) / face.unitsPerEm;
    }
    clusters.push({ text: t, em: x, face, glyphs, space, breakBefore, bidi: space ? 'N' : bidiOf(t) });
  }
  return clusters;
}

/** Paragraph direction (first strong character), spec-silent texts default to left-to-right. */
export function isRtlParagraph(clusters: readonly Cluster[]): boolean {
  for (const c of clusters) {
    if (c.bidi === 'R') return true;
    if (c.bidi === 'L') return false;
  }
  return false;
}

/**
 * Reorders one line from logical to visual order: a compact form of the Unicode bidi algorithm
 * (strong types, numbers after right-to-left text, neutrals between equal directions, then
 * reversal of runs from the highest level down).
 */
export function visualOrder(line: readonly Cluster[], rtlParagraph: boolean): Cluster[] {
  const base = rtlParagraph ? 1 : 0;
  const n = line.length;
  const strong: ('L' | 'R' | undefined)[] = new Array(n);
  let last: 'L' | 'R' = rtlParagraph ? 'R' : 'L';
  for (let i = 0; i < n; i++) {
    const b = line[i]!.bidi;
    if (b === 'L' || b === 'R') last = b;
    // A number takes the direction of the strong text before it for neutral resolution.
    strong[i] = b === 'L' || b === 'R' ? b : b === 'EN' ? (last === 'R' ? 'R' : 'L') : undefined;
  }
  const levels = new Array<number>(n);
  for (let i = 0; i < n; i++) {
    const c = line[i]!;
    if (c.bidi === 'R') levels[i] = 1;
    else if (c.bidi === 'L') levels[i] = rtlParagraph ? 2 : 0;
    else if (c.bidi === 'EN') levels[i] = strong[i] === 'R' || rtlParagraph ? 2 : 0;
    else {
      let before: 'L' | 'R' = rtlParagraph ? 'R' : 'L';
      for (let j = i - 1; j >= 0; j--) if (strong[j] !== undefined) { before = strong[j]!; break; }
      let after: 'L' | 'R' = rtlParagraph ? 'R' : 'L';
      for (let j = i + 1; j < n; j++) if (strong[j] !== undefined) { after = strong[j]!; break; }
      levels[i] = before === after ? (before === 'R' ? 1 : rtlParagraph ? 2 : 0) : base;
    }
  }
  const out = [...line];
  const lv = [...levels];
  const max = Math.max(0, ...lv);
  for (let level = max; level >= 1; level--) {
    for (let i = 0; i < n; ) {
      if (lv[i]! < level) { i++; continue; }
      let j = i;
      while (j < n && lv[j]! >= level) j++;
      reverse(out, i, j);
      reverse(lv, i, j);
      i = j;
    }
  }
  return out;
}

function reverse<T>(a: T[], from: number, to: number): void {
  for (let i = from, j = to - 1; i < j; i++, j--) [a[i], a[j]] = [a[j]!, a[i]!];
}
