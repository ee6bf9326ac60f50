/**
 * The typefaces of the card (spec 4.5 rule 6): Noto Sans for Latin, Cyrillic and Greek,
 * Noto Sans Mono for `statValue`, `start` and `target`, and fallback faces for Arabic, Hebrew,
 * Devanagari, Thai and CJK (Droid Sans Fallback; Nanum Gothic for Hangul). All are TrueType
 * (glyf) files from Debian packages listed in scripts/apt-packages.txt (fonts-noto-core,
 * fonts-noto-mono, fonts-droid-fallback, fonts-nanum), never fetched at run time. They are read
 * as opentype.js 0.4 (pureimage's reader) reads them: glyf outlines and BMP cmaps only, so code
 * points above U+FFFF that are not emoji draw as the face's empty box (spec 4.5 rule 6). Each
 * face is read on first need, once per worker thread (truetype.ts).
 */
import { existsSync } from 'node:fs';
import { LazyTrueType, type FaceStage, type OtGlyph } from './truetype.ts';

export type { OtGlyph, OutlineCommand } from './truetype.ts';

/**
 * One face. `covers` says whether the face has its own glyph for a code point. Nothing is read
 * until first asked (truetype.ts): `covers` reads the cmap, `glyph` the outlines.
 */
export interface Face {
  readonly name: string;
  /** The TrueType file the face is read from. */
  readonly file: string;
  readonly unitsPerEm: number;
  /** How much of the file has been read so far. */
  readonly stage: FaceStage;
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

function lazyFace(file: string, name: string, accepts?: (cp: number) => boolean): Face {
  const font = new LazyTrueType(file);
  return {
    name,
    file,
    get unitsPerEm() {
      return font.unitsPerEm;
    },
    get stage() {
      return font.stage;
    },
    covers: (cp) => font.glyphIndex(cp) !== 0 && (accepts === undefined || accepts(cp)),
    glyph: (cp) => font.glyphAt(font.glyphIndex(cp)),
  };
}

/** Every face a worker may need, each read on first need and kept for the thread's life. */
export interface FaceSet {
  chain(role: Role): readonly Face[];
  /** Every face of the chains, once each. */
  all(): readonly Face[];
  /** The first face of each role (the ones warm-up reads). */
  primary(): readonly Face[];
}

let loaded: FaceSet | undefined;

/**
 * The faces of this worker thread. Only the primary faces are read by warm-up (draw.ts); a
 * fallback is read when a card first needs it, so a Latin card never reads the CJK faces.
 */
export function faces(): FaceSet {
  if (loaded !== undefined) return loaded;
  const noto = (name: string) => `${NOTO}/${name}.ttf`;
  const optional = (names: string[]) => names.filter((n) => existsSync(noto(n))).map((n) => lazyFace(noto(n), n));
  const bold = lazyFace(noto('NotoSans-Bold'), 'NotoSans-Bold');
  const regular = lazyFace(noto('NotoSans-Regular'), 'NotoSans-Regular');
  // Spec 4.5 rule 6: the monospace face carries one Greek letter, pi; other Greek falls back.
  const mono = lazyFace(noto('NotoSansMono-Bold'), 'NotoSansMono-Bold',
    (cp) => cp === PI || !GREEK.test(String.fromCodePoint(cp)));
  const cjk = lazyFace(DROID, 'DroidSansFallbackFull');
  const hangulBold = lazyFace(`${NANUM}/NanumGothicBold.ttf`, 'NanumGothicBold');
  const hangul = lazyFace(`${NANUM}/NanumGothic.ttf`, 'NanumGothic');
  const symbols = optional(SYMBOLS);
  const boldChain = [bold, ...optional(FALLBACKS.bold), cjk, hangulBold, ...symbols];
  const regularChain = [regular, ...optional(FALLBACKS.regular), cjk, hangul, ...symbols];
  const monoChain = [mono, ...boldChain];
  const every = [...new Set([...monoChain, ...regularChain])];
  loaded = {
    chain: (role) => (role === 'mono' ? monoChain : role === 'bold' ? boldChain : regularChain),
    all: () => every,
    primary: () => [bold, regular, mono],
  };
  return loaded;
}
