/**
 * Text into clusters: one per grapheme, each drawn with the first face of its role's chain
 * that has glyphs for it, or as a colour emoji image. Widths are measured with the face each
 * cluster is actually drawn with, in em so they scale with the font size.
 */
import { joinArabic } from './arabic.ts';
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
  /** The same cluster mirrored, drawn where it falls in a right-to-left run (brackets). */
  mirror?: Cluster;
  /** Emoji image files drawn side by side. */
  readonly emoji?: readonly string[];
  readonly space: boolean;
  /** Whether a line may start at this cluster. */
  readonly breakBefore: boolean;
  readonly bidi: BidiClass;
  /** Highest ink above the baseline and lowest below it, in em (for room between slots). */
  readonly ascent: number;
  readonly descent: number;
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

// Vowel signs written before the consonant they follow in the text (Devanagari, Bengali,
// Gurmukhi, Gujarati, Oriya, Tamil, Malayalam). With no shaping engine to reorder them, the
// cluster draws them first, so "कि" is not drawn as "क" followed by "ि".
const PRE_BASE = /^[\u093f\u09bf\u09c7\u09c8\u0a3f\u0abf\u0b47\u0bc6-\u0bc8\u0d46-\u0d48]$/u;

const graphemes = new Intl.Segmenter('und', { granularity: 'grapheme' });
const words = new Intl.Segmenter('und', { granularity: 'word' });

function bidiOf(text: string): BidiClass {
  // Digits first: Arabic-Indic digits belong to the Arabic script but read left to right.
  if (DIGIT.test(text)) return 'EN';
  // Arabic number separators and the Arabic percent sign are neutrals that join numbers, not letters.
  if (SEPARATOR.test(text) || TERMINATOR.test(text)) return 'N';
  const first = String.fromCodePoint(text.codePointAt(0) ?? 32);
  if (RTL.test(first)) return 'R';
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

function covered(face: Face, cps: readonly number[]): boolean {
  return cps.every((cp) => face.covers(cp) || INVISIBLE.test(String.fromCodePoint(cp)));
}

interface GlyphRun {
  glyphs: { glyph: OtGlyph; x: number }[];
  em: number;
  ascent: number;
  descent: number;
}

function glyphRun(face: Face, cps: readonly number[]): GlyphRun {
  const glyphs: { glyph: OtGlyph; x: number }[] = [];
  let em = 0;
  let ascent = 0;
  let descent = 0;
  for (const cp of cps) {
    if (INVISIBLE.test(String.fromCodePoint(cp))) continue;
    const glyph = face.glyph(cp);
    glyphs.push({ glyph, x: em });
    em += (glyph.advanceWidth ?? 0) / face.unitsPerEm;
    // The glyph's header (its bounding box) is read when its outline is first used.
    if (glyph.yMax === undefined) void glyph.path.commands;
    ascent = Math.max(ascent, (glyph.yMax ?? 0) / face.unitsPerEm);
    descent = Math.max(descent, -(glyph.yMin ?? 0) / face.unitsPerEm);
  }
  return { glyphs, em, ascent, descent };
}

// An emoji image spans from 0.86 em above the baseline to 0.18 em below it (paint-text.ts).
const EMOJI_ASCENT = 0.86;
const EMOJI_DESCENT = 0.18;

// Brackets and quotes that a right-to-left run draws mirrored (bidi rule L4), "(نعم)" not ")نعم(".
const MIRROR = new Map(['()', ')(', '[]', '][', '{}', '}{', '<>', '><', '«»', '»«', '‹›', '›‹'].map((p) => [p[0]!, p[1]!]));

/** Shapes cleaned text for a role into clusters, with break opportunities marked. */
export function shape(input: string, role: Role): Cluster[] {
  const chain = faces().chain(role);
  // Composed forms first: a face's own "é" sits better than "e" with a mark placed by default.
  const text = joinArabic(input.normalize('NFC'), (cp) => chain.some((f) => f.covers(cp)));
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
      clusters.push({ text: t, em: EMOJI_ADVANCE * files.length, emoji: files, space, breakBefore, bidi: 'N', ascent: EMOJI_ASCENT, descent: EMOJI_DESCENT });
      continue;
    }
    const cps = [...t].map((c) => c.codePointAt(0)!);
    const preBase = cps.findIndex((cp, k) => k > 0 && PRE_BASE.test(String.fromCodePoint(cp)));
    if (preBase > 0) cps.unshift(...cps.splice(preBase, 1));
    let face = pickFace(chain, cps);
    let drawn = cps;
    if (!covered(face, cps)) {
      // No face has it: a compatibility form (mathematical letters such as 𝔘, fullwidth forms,
      // ligatures) is drawn as its plain equivalent rather than as an empty box.
      const plain = [...t.normalize('NFKC')].map((c) => c.codePointAt(0)!);
      const plainFace = pickFace(chain, plain);
      if (plain.join() !== cps.join() && covered(plainFace, plain)) {
        face = plainFace;
        drawn = plain;
      }
    }
    const { glyphs, em, ascent, descent } = glyphRun(face, drawn);
    const mirrored = MIRROR.get(t);
    const cluster: Cluster = { text: t, em, face, glyphs, space, breakBefore, bidi: space ? 'N' : bidiOf(t), ascent, descent };
    if (mirrored !== undefined && face.covers(mirrored.codePointAt(0)!)) {
      const m = glyphRun(face, [mirrored.codePointAt(0)!]);
      cluster.mirror = { ...cluster, text: mirrored, glyphs: m.glyphs, em: m.em };
    }
    clusters.push(cluster);
  }
  return clusters;
}

/** Direction of the first strong character, or undefined when the text has none (digits, emoji). */
export function paragraphDirection(clusters: readonly Cluster[]): 'L' | 'R' | undefined {
  for (const c of clusters) {
    if (c.bidi === 'R' || c.bidi === 'L') return c.bidi;
  }
  return undefined;
}

/** Paragraph direction (first strong character); text with none is left-to-right. */
export function isRtlParagraph(clusters: readonly Cluster[]): boolean {
  return paragraphDirection(clusters) === 'R';
}

/**
 * Reorders one line from logical to visual order: a compact form of the Unicode bidi algorithm
 * (strong types, numbers after right-to-left text, neutrals between equal directions, then
 * reversal of runs from the highest level down).
 */
export function visualOrder(line: readonly Cluster[], rtlParagraph: boolean): Cluster[] {
  const base = rtlParagraph ? 1 : 0;
  const n = line.length;
  const cls = numberParts(line);
  const strong: ('L' | 'R' | undefined)[] = new Array(n);
  let last: 'L' | 'R' = rtlParagraph ? 'R' : 'L';
  for (let i = 0; i < n; i++) {
    const b = cls[i]!;
    if (b === 'L' || b === 'R') last = b;
    // A number takes the direction of the strong text before it for neutral resolution.
    strong[i] = b === 'L' || b === 'R' ? b : b === 'EN' ? (last === 'R' ? 'R' : 'L') : undefined;
  }
  const levels = new Array<number>(n);
  for (let i = 0; i < n; i++) {
    const c = cls[i]!;
    if (c === 'R') levels[i] = 1;
    else if (c === 'L') levels[i] = rtlParagraph ? 2 : 0;
    else if (c === 'EN') levels[i] = strong[i] === 'R' || rtlParagraph ? 2 : 0;
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
  // Rule L4: a mirrorable character at an odd (right-to-left) level is drawn mirrored.
  return out.map((c, k) => (lv[k]! % 2 === 1 && c.mirror !== undefined ? c.mirror : c));
}

// Rules W4 and W5 of the bidi algorithm: one separator between two digits, and percent or
// currency signs next to digits, are part of the number, so "98.6%" stays whole in RTL text.
const SEPARATOR = /^[.,:/\u066b\u066c\u060c]$/u;
const TERMINATOR = /^[%\u066a\u2030#$\u00a2-\u00a5\u00b0\u20a0-\u20cf+\u2212-]$/u;

function numberParts(line: readonly Cluster[]): BidiClass[] {
  const cls = line.map((c) => c.bidi);
  const n = cls.length;
  for (let i = 1; i < n - 1; i++) {
    if (cls[i] === 'N' && cls[i - 1] === 'EN' && cls[i + 1] === 'EN' && SEPARATOR.test(line[i]!.text)) cls[i] = 'EN';
  }
  for (let i = 1; i < n; i++) {
    if (cls[i] === 'N' && cls[i - 1] === 'EN' && TERMINATOR.test(line[i]!.text)) cls[i] = 'EN';
  }
  for (let i = n - 2; i >= 0; i--) {
    if (cls[i] === 'N' && cls[i + 1] === 'EN' && TERMINATOR.test(line[i]!.text)) cls[i] = 'EN';
  }
  return cls;
}

function reverse<T>(a: T[], from: number, to: number): void {
  for (let i = from, j = to - 1; i < j; i++, j--) [a[i], a[j]] = [a[j]!, a[i]!];
}
