/**
 * Text into clusters, the units lines are broken and reordered in. The text is split into runs
 * of one script drawn by one face (the first face of the script, or the role's face, that has
 * glyphs for the whole grapheme); each run is shaped by HarfBuzz with that face (harfbuzz.ts),
 * so conjuncts, reph, reordered vowel signs, marks, Arabic joining, kerning and ligatures are the
 * face's own. A cluster is the smallest span that is whole both as graphemes and as HarfBuzz
 * clusters, with its glyphs in visual order. Emoji are drawn as colour images. Widths are in em
 * so they scale with the font size.
 */
import { breakOpportunities } from './breaks.ts';
import { emojiFiles } from './emoji.ts';
import { faces, type Face, type Role } from './faces.ts';
import { isRtlScript, scriptOf } from './scripts.ts';

/** Bidirectional class of a cluster: left-to-right, right-to-left, number, neutral. */
export type BidiClass = 'L' | 'R' | 'EN' | 'N';

/** A glyph of a face placed from its cluster's left edge, in em (y up). */
export interface PlacedGlyph {
  readonly id: number;
  readonly x: number;
  readonly y: number;
}

export interface Cluster {
  readonly text: string;
  /** Advance in em. */
  readonly em: number;
  readonly face?: Face;
  /** Glyphs, left to right, with their offset from the cluster's left edge. */
  readonly glyphs?: readonly PlacedGlyph[];
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

const DIGIT = /^\p{Nd}/u;
const LETTER = /^[\p{L}\p{M}]/u;
// Default-ignorable characters that draw nothing: ZWSP, ZWNJ, ZWJ, word joiner, variation selectors.
const INVISIBLE = /^[\u200b-\u200d\u2060\ufe00-\ufe0f\u{e0100}-\u{e01ef}\u{e0020}-\u{e007f}]$/u;

const graphemes = new Intl.Segmenter('und', { granularity: 'grapheme' });

function bidiOf(text: string): BidiClass {
  // Digits first: Arabic-Indic digits belong to the Arabic script but read left to right.
  if (DIGIT.test(text)) return 'EN';
  // Arabic number separators and the Arabic percent sign are neutrals that join numbers, not letters.
  if (SEPARATOR.test(text) || TERMINATOR.test(text)) return 'N';
  if (isRtlScript(scriptOf(text.codePointAt(0) ?? 32))) return 'R';
  if (LETTER.test(text)) return 'L';
  return 'N';
}

const visible = (cps: readonly number[]) => cps.filter((cp) => !INVISIBLE.test(String.fromCodePoint(cp)));

/** Characters drawn as the empty box since the last `takeMissing`, by script. */
const missing = new Map<string, number>();

function count(into: Map<string, number>, script: string, n: number): void {
  into.set(script, (into.get(script) ?? 0) + n);
}

/** Counts of characters drawn as the empty box, by script, since the last call; then starts over. */
export function takeMissing(): Record<string, number> {
  const out = Object.fromEntries(missing);
  missing.clear();
  return out;
}

// An emoji image spans from 0.86 em above the baseline to 0.18 em below it (paint-text.ts).
const EMOJI_ASCENT = 0.86;
const EMOJI_DESCENT = 0.18;

// Brackets and quotes that a right-to-left run draws mirrored (bidi rule L4), "(نعم)" not ")نعم(".
const MIRROR = new Map(['()', ')(', '[]', '][', '{}', '}{', '<>', '><', '«»', '»«', '‹›', '›‹'].map((p) => [p[0]!, p[1]!]));

/** One grapheme: where it is in the text, and the face and script it is drawn with. */
interface Grapheme {
  start: number;
  end: number;
  text: string;
  emoji?: string[];
  face?: Face;
  script: string;
  /** The code points drawn (the NFKC form when only that has glyphs). */
  drawn?: string;
  missing?: boolean;
}

/** The script of a grapheme: that of its first character of a script, else Common. */
function graphemeScript(cps: readonly number[]): string {
  for (const cp of cps) {
    const s = scriptOf(cp);
    if (s !== 'Common' && s !== 'Inherited') return s;
  }
  return 'Common';
}

function pick(role: Role, script: string, cps: readonly number[], previous: Face | undefined): Face | undefined {
  const set = faces();
  const shown = visible(cps);
  if (shown.length === 0) return previous ?? set.primary(role);
  const all = (f: Face) => shown.every((cp) => f.covers(cp));
  // Shared characters (spaces, digits, punctuation) stay in the face of the text around them.
  if (script === 'Common' && previous !== undefined && all(previous)) return previous;
  const primary = set.primary(role);
  if (all(primary)) return primary;
  return set.script(role, script).find(all) ?? set.fallbacks(role).find(all);
}

/** Graphemes with their face and script; characters no face has are counted into `boxes`. */
function classify(text: string, role: Role, boxes: Map<string, number>): Grapheme[] {
  const out: Grapheme[] = [];
  let previous: Face | undefined;
  let runScript = 'Common';
  for (const g of graphemes.segment(text)) {
    const t = g.segment;
    const start = g.index;
    const end = start + t.length;
    const files = emojiFiles(t);
    if (files !== undefined) {
      out.push({ start, end, text: t, emoji: files, script: 'Common' });
      previous = undefined;
      continue;
    }
    const cps = [...t].map((c) => c.codePointAt(0)!);
    const own = graphemeScript(cps);
    if (own !== 'Common') runScript = own;
    let face = pick(role, own, cps, previous);
    let drawn: string | undefined;
    if (face === undefined) {
      // No face has it: a compatibility form (mathematical letters such as 𝔘, fullwidth forms,
      // ligatures) is drawn as its plain equivalent rather than as an empty box.
      const plain = t.normalize('NFKC');
      const plainCps = [...plain].map((c) => c.codePointAt(0)!);
      face = plain === t ? undefined : pick(role, graphemeScript(plainCps), plainCps, previous);
      if (face !== undefined) drawn = plain;
    }
    if (face === undefined) {
      // Spec 4.5 rule 6: what no face has is drawn as the empty box, and counted by script.
      const script = own === 'Common' ? scriptOf(visible(cps)[0] ?? 32) : own;
      count(boxes, script, 1);
      out.push({ start, end, text: t, face: faces().primary(role), script: runScript, missing: true });
      previous = undefined;
      continue;
    }
    out.push({ start, end, text: t, face, script: own === 'Common' ? runScript : own, drawn });
    previous = face;
  }
  return out;
}

function inkOf(face: Face, glyphs: readonly PlacedGlyph[]): { ascent: number; descent: number } {
  const upem = face.font.unitsPerEm;
  let ascent = 0;
  let descent = 0;
  for (const g of glyphs) {
    const box = face.font.box(g.id);
    ascent = Math.max(ascent, box.yMax / upem + g.y);
    descent = Math.max(descent, -box.yMin / upem - g.y);
  }
  return { ascent, descent };
}

/** Shapes `text` alone, left to right, into one cluster's glyphs (brackets and replaced forms). */
function alone(face: Face, text: string): { glyphs: PlacedGlyph[]; em: number } {
  const upem = face.font.unitsPerEm;
  const glyphs: PlacedGlyph[] = [];
  let pen = 0;
  for (const g of face.font.shape(text, 0, text.length, 'ltr')) {
    glyphs.push({ id: g.id, x: (pen + g.dx) / upem, y: g.dy / upem });
    pen += g.advance;
  }
  return { glyphs, em: pen / upem };
}

/** Shapes a run of graphemes of one face, script and direction into clusters. */
function shapeRun(text: string, run: readonly Grapheme[], breaks: ReadonlySet<number>, out: Cluster[]): void {
  const face = run[0]!.face!;
  const upem = face.font.unitsPerEm;
  const start = run[0]!.start;
  const end = run[run.length - 1]!.end;
  const shaped = face.font.shape(text, start, end, isRtlScript(run[0]!.script) ? 'rtl' : 'ltr');
  // Cluster boundaries: grapheme starts at which a HarfBuzz cluster also starts.
  const clusterStarts = new Set(shaped.map((g) => g.cluster));
  const unitOf = new Int32Array(end - start);
  const bounds: number[] = [];
  for (const g of run) {
    if (bounds.length === 0 || clusterStarts.has(g.start)) bounds.push(g.start);
    unitOf.fill(bounds.length - 1, g.start - start, g.end - start);
  }
  bounds.push(end);
  const units: { glyphs: PlacedGlyph[]; pen: number }[] = bounds.slice(1).map(() => ({ glyphs: [], pen: 0 }));
  for (const g of shaped) {
    const u = units[unitOf[g.cluster - start]!]!;
    u.glyphs.push({ id: g.id, x: (u.pen + g.dx) / upem, y: g.dy / upem });
    u.pen += g.advance;
  }
  for (let k = 0; k < units.length; k++) {
    const from = bounds[k]!;
    const t = text.slice(from, bounds[k + 1]!);
    const space = t === ' ';
    const breakBefore = out.length === 0 || breaks.has(from);
    const bidi: BidiClass = space ? 'N' : bidiOf(t);
    const mirrored = MIRROR.get(t);
    let { glyphs, pen } = units[k]!;
    let em = pen / upem;
    if (mirrored !== undefined) ({ glyphs, em } = alone(face, t));
    const cluster: Cluster = { text: t, em, face, glyphs, space, breakBefore, bidi, ...inkOf(face, glyphs) };
    if (mirrored !== undefined && face.covers(mirrored.codePointAt(0)!)) {
      const m = alone(face, mirrored);
      cluster.mirror = { ...cluster, text: mirrored, glyphs: m.glyphs, em: m.em };
    }
    out.push(cluster);
  }
}

// Texts shaped recently, by role: a card's brand, footer and kicker repeat from card to card.
// Each entry keeps the characters it drew as empty boxes, so they are counted on every card.
const MAX_SHAPED = 512;
const shaped = new Map<string, { clusters: readonly Cluster[]; boxes: Map<string, number> }>();

/** Shapes cleaned text for a role into clusters, with break opportunities marked. */
export function shape(input: string, role: Role): readonly Cluster[] {
  const key = `${role}\u0000${input}`;
  let hit = shaped.get(key);
  if (hit === undefined) {
    const boxes = new Map<string, number>();
    hit = { clusters: shapeText(input, role, boxes), boxes };
    if (shaped.size >= MAX_SHAPED) shaped.clear();
    shaped.set(key, hit);
  }
  for (const [script, n] of hit.boxes) count(missing, script, n);
  return hit.clusters;
}

function shapeText(input: string, role: Role, boxes: Map<string, number>): Cluster[] {
  // Composed forms first: a face's own "é" sits better than "e" with a mark placed by default.
  const text = input.normalize('NFC');
  const breaks = breakOpportunities(text);
  const all = classify(text, role, boxes);
  const clusters: Cluster[] = [];
  for (let i = 0; i < all.length; ) {
    const g = all[i]!;
    if (g.emoji !== undefined) {
      const breakBefore = clusters.length === 0 || breaks.has(g.start);
      clusters.push({ text: g.text, em: EMOJI_ADVANCE * g.emoji.length, emoji: g.emoji, space: false, breakBefore, bidi: 'N', ascent: EMOJI_ASCENT, descent: EMOJI_DESCENT });
      i++;
      continue;
    }
    if (g.drawn !== undefined || g.missing === true) {
      // A replaced form or a missing glyph is one cluster of its own.
      const face = g.face!;
      const { glyphs, em } = g.missing === true ? { glyphs: [{ id: 0, x: 0, y: 0 }], em: face.font.advance(0) / face.font.unitsPerEm } : alone(face, g.drawn!);
      const breakBefore = clusters.length === 0 || breaks.has(g.start);
      clusters.push({ text: g.text, em, face, glyphs, space: false, breakBefore, bidi: bidiOf(g.text), ...inkOf(face, glyphs) });
      i++;
      continue;
    }
    let j = i + 1;
    const joins = (h: Grapheme) => h.face === g.face && h.script === g.script && h.emoji === undefined && h.drawn === undefined && h.missing !== true;
    while (j < all.length && joins(all[j]!)) j++;
    shapeRun(text, all.slice(i, j), breaks, clusters);
    i = j;
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
