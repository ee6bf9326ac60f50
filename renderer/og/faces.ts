/**
 * The typefaces of the card (spec 4.5 rule 6, issue 4): Noto Sans for Latin, Cyrillic and Greek,
 * Noto Sans Mono for `statValue`, `start` and `target`, and fallback faces for Arabic, Hebrew,
 * Devanagari, Thai and CJK (Droid Sans Fallback; Nanum Gothic for Hangul). All are TrueType
 * (glyf) files from Debian packages listed in scripts/apt-packages.txt (fonts-noto-core,
 * fonts-noto-mono, fonts-droid-fallback, fonts-nanum), never fetched at run time; pureimage parses them with
 * its opentype.js, which reads glyf outlines and BMP cmaps only, so code points above U+FFFF that
 * are not emoji draw as the face's empty box (spec 4.5 rule 6). Faces load once per worker.
 */
import { existsSync } from 'node:fs';
import * as PImage from 'pureimage';

/** The parts of an opentype.js font and glyph the drawing uses. */
export interface OutlineCommand {
  type: 'M' | 'L' | 'Q' | 'C' | 'Z';
  x: number;
  y: number;
  x1: number;
  y1: number;
  x2: number;
  y2: number;
}
export interface OtGlyph {
  index: number;
  advanceWidth: number;
  /** Bounding box in font units, from the glyph's header. */
  yMin?: number;
  yMax?: number;
  path: { commands: OutlineCommand[] };
}
interface OtFont {
  unitsPerEm: number;
  ascender: number;
  descender: number;
  glyphs: { get(index: number): OtGlyph | undefined };
  tables: { cmap: { glyphIndexMap: Record<number, number> } };
}

/** One loaded face. `covers` says whether the face has its own glyph for a code point. */
export interface Face {
  readonly name: string;
  /** The TrueType file the face was read from. */
  readonly file: string;
  readonly unitsPerEm: number;
  covers(codePoint: number): boolean;
  glyph(codePoint: number): OtGlyph;
}

/** Text roles of the card, each with its own chain of faces. */
export type Role = 'bold' | 'regular' | 'mono';

const NOTO = '/usr/share/fonts/truetype/noto';
const DROID = '/usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf';
// Hangul, which the Droid fallback lacks (Debian fonts-nanum, TrueType).
const NANUM = '/usr/share/fonts/truetype/nanum';

// Fallbacks in the order tried; the CJK face comes last because it also covers Latin and Greek.
const FALLBACKS: Record<'bold' | 'regular', string[]> = {
  bold: ['NotoSansArabic-Bold', 'NotoSansHebrew-Bold', 'NotoSansDevanagari-Bold', 'NotoSansThai-Bold',
    'NotoSansArmenian-Bold', 'NotoSansGeorgian-Bold', 'NotoSansBengali-Bold', 'NotoSansTamil-Bold'],
  regular: ['NotoSansArabic-Regular', 'NotoSansHebrew-Regular', 'NotoSansDevanagari-Regular',
    'NotoSansThai-Regular', 'NotoSansArmenian-Regular', 'NotoSansGeorgian-Regular',
    'NotoSansBengali-Regular', 'NotoSansTamil-Regular'],
};
const SYMBOLS = ['NotoSansSymbols-Regular', 'NotoSansSymbols2-Regular', 'NotoSansMath-Regular'];

const GREEK = /^[\u0370-\u03ff\u1f00-\u1fff]$/u;
const PI = 0x03c0;

function loadFace(file: string, name: string, accepts?: (cp: number) => boolean): Face {
  const registered = PImage.registerFont(file, `og-${name}`).loadSync();
  const font = registered.font as unknown as OtFont;
  const map = font.tables.cmap.glyphIndexMap;
  const notdef = font.glyphs.get(0)!;
  return {
    name,
    file,
    unitsPerEm: font.unitsPerEm,
    covers: (cp) => (map[cp] ?? 0) !== 0 && (accepts === undefined || accepts(cp)),
    glyph: (cp) => font.glyphs.get(map[cp] ?? 0) ?? notdef,
  };
}

/** Every face a worker needs, loaded once. */
export interface FaceSet {
  chain(role: Role): readonly Face[];
  /** Every face loaded, once each. */
  all(): readonly Face[];
}

let loaded: FaceSet | undefined;

/** Loads the faces on first use (once per worker thread) and returns them. */
export function faces(): FaceSet {
  if (loaded !== undefined) return loaded;
  const noto = (name: string) => `${NOTO}/${name}.ttf`;
  const optional = (names: string[]) => names.filter((n) => existsSync(noto(n))).map((n) => loadFace(noto(n), n));
  const bold = loadFace(noto('NotoSans-Bold'), 'NotoSans-Bold');
  const regular = loadFace(noto('NotoSans-Regular'), 'NotoSans-Regular');
  // Spec 4.5 rule 6: the monospace face carries one Greek letter, pi; other Greek falls back.
  const mono = loadFace(noto('NotoSansMono-Bold'), 'NotoSansMono-Bold',
    (cp) => cp === PI || !GREEK.test(String.fromCodePoint(cp)));
  const cjk = loadFace(DROID, 'DroidSansFallbackFull');
  const hangulBold = loadFace(`${NANUM}/NanumGothicBold.ttf`, 'NanumGothicBold');
  const hangul = loadFace(`${NANUM}/NanumGothic.ttf`, 'NanumGothic');
  const symbols = optional(SYMBOLS);
  const boldChain = [bold, ...optional(FALLBACKS.bold), cjk, hangulBold, ...symbols];
  const regularChain = [regular, ...optional(FALLBACKS.regular), cjk, hangul, ...symbols];
  const monoChain = [mono, ...boldChain];
  const every = [...new Set([...monoChain, ...regularChain])];
  loaded = {
    chain: (role) => (role === 'mono' ? monoChain : role === 'bold' ? boldChain : regularChain),
    all: () => every,
  };
  return loaded;
}
