/**
 * The typefaces of the card (spec 4.5 rule 6): Noto Sans for Latin, Cyrillic and Greek, Noto
 * Sans Mono for `statValue`, `start` and `target`, and for every other script that Debian's
 * Noto packages cover (all of the Basic Multilingual Plane's, and historic scripts above it),
 * that script's Noto face (Noto Sans <Script>, or Noto Serif <Script> where there is no sans),
 * bold where the template draws bold and the family has a bold. Han, kana and Bopomofo are drawn
 * with Droid Sans Fallback (widened where bold: it has no bold), Hangul with Nanum Gothic;
 * symbols with Noto Sans Symbols, Symbols 2 and Math. All are files of
 * Debian packages listed in scripts/apt-packages.txt, never fetched at run time, and each is
 * read into HarfBuzz (harfbuzz.ts) on first need, once per worker thread.
 */
import { existsSync } from 'node:fs';
import { HbFont } from './harfbuzz.ts';
import { SCRIPT_NAMES } from './scripts.ts';

/** One face: a font file and, for the monospace face, the code points it may draw. */
export interface Face {
  readonly name: string;
  /** The font file the face is read from. */
  readonly file: string;
  readonly font: HbFont;
  /**
   * Synthetic bold for a face with no bold of its own: strokes are widened by this share of
   * the size when drawn (paint-text.ts), as browsers do.
   */
  readonly embolden?: number;
  /** Whether the face has its own glyph for a code point (and may draw it). */
  covers(codePoint: number): boolean;
}

/** Text roles of the card. */
export type Role = 'bold' | 'regular' | 'mono';

const NOTO = '/usr/share/fonts/truetype/noto';
const DROID = '/usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf';
// Hangul, which the Droid fallback lacks (Debian fonts-nanum).
const NANUM = '/usr/share/fonts/truetype/nanum';

// Strokes of a synthetic bold are widened by this share of the size (3 px at the title's 76 px).
const SYNTHETIC_BOLD = 0.04;
const GREEK = /^[\u0370-\u03ff\u1f00-\u1fff]$/u;
const PI = 0x03c0;

// Scripts whose Noto file name is not the script's name without underscores.
const FAMILY: Record<string, string> = { Nko: 'NKo' };
const SYMBOLS = ['NotoSansSymbols-Regular', 'NotoSansSymbols2-Regular', 'NotoSansMath-Regular'];

function makeFace(file: string, name: string, accepts?: (cp: number) => boolean): Face {
  const font = new HbFont(file);
  return {
    name,
    file,
    font,
    covers: (cp) => font.covers(cp) && (accepts === undefined || accepts(cp)),
  };
}

/** Every face a worker may need, each read on first need and kept for the thread's life. */
export interface FaceSet {
  /** The face a role starts with (Noto Sans Bold, Noto Sans Regular, Noto Sans Mono Bold). */
  primary(role: Role): Face;
  /** The faces of a script for a role, best first (empty when Noto has none). */
  script(role: Role, script: string): readonly Face[];
  /** Faces tried last, for symbols and anything the script's faces lack. */
  fallbacks(role: Role): readonly Face[];
  /** Every face of every role and script, once each. */
  all(): readonly Face[];
}

let loaded: FaceSet | undefined;

/**
 * The faces of this worker thread. Nothing is read until a card needs it: warm-up (draw.ts)
 * reads the primary faces, and a Latin card never reads a script face.
 */
export function faces(): FaceSet {
  if (loaded !== undefined) return loaded;
  const byFile = new Map<string, Face>();
  const face = (file: string, name: string, accepts?: (cp: number) => boolean): Face => {
    let f = byFile.get(file);
    if (f === undefined) {
      f = makeFace(file, name, accepts);
      byFile.set(file, f);
    }
    return f;
  };
  const noto = (name: string) => face(`${NOTO}/${name}.ttf`, name);
  const installed = (names: string[]) => names.filter((n) => existsSync(`${NOTO}/${n}.ttf`)).map(noto);
  const bold = noto('NotoSans-Bold');
  const regular = noto('NotoSans-Regular');
  // Spec 4.5 rule 6: the monospace face carries one Greek letter, pi; other Greek falls back.
  const mono = face(`${NOTO}/NotoSansMono-Bold.ttf`, 'NotoSansMono-Bold',
    (cp) => cp === PI || !GREEK.test(String.fromCodePoint(cp)));
  const cjk = face(DROID, 'DroidSansFallbackFull');
  // Droid Sans Fallback has no bold: bold slots draw it widened (Noto Sans CJK Bold would be a
  // 20 MB collection in every thread's memory).
  const cjkBold: Face = { ...cjk, name: 'DroidSansFallbackFull-SyntheticBold', embolden: SYNTHETIC_BOLD };
  byFile.set(`${DROID}#bold`, cjkBold); // listed by all(), sharing the regular face's font
  const hangul = { bold: face(`${NANUM}/NanumGothicBold.ttf`, 'NanumGothicBold'), regular: face(`${NANUM}/NanumGothic.ttf`, 'NanumGothic') };
  const symbols = installed(SYMBOLS);
  const scriptFaces = new Map<string, readonly Face[]>();
  const script = (role: Role, name: string): readonly Face[] => {
    const weight = role === 'regular' ? 'regular' : 'bold';
    const key = `${weight}|${name}`;
    let list = scriptFaces.get(key);
    if (list !== undefined) return list;
    const cjkFace = weight === 'bold' ? cjkBold : cjk;
    if (name === 'Han' || name === 'Hiragana' || name === 'Katakana' || name === 'Bopomofo') list = [cjkFace];
    else if (name === 'Hangul') list = [hangul[weight], cjkFace];
    else if (name === 'Latin' || name === 'Greek' || name === 'Cyrillic' || name === 'Common' || name === 'Inherited') list = [];
    else {
      const family = FAMILY[name] ?? name.replaceAll('_', '');
      const weights = weight === 'bold' ? ['Bold', 'Regular'] : ['Regular'];
      list = installed(weights.flatMap((w) => [`NotoSans${family}-${w}`, `NotoSerif${family}-${w}`]));
    }
    scriptFaces.set(key, list);
    return list;
  };
  const fallbacks = (role: Role): readonly Face[] => (role === 'regular' ? [regular, ...symbols, cjk] : [bold, ...symbols, cjkBold]);
  loaded = {
    primary: (role) => (role === 'mono' ? mono : role === 'bold' ? bold : regular),
    script,
    fallbacks,
    all: () => {
      for (const role of ['bold', 'regular'] as const) {
        for (const name of SCRIPT_NAMES) script(role, name);
        fallbacks(role);
      }
      return [...byFile.values()];
    },
  };
  return loaded;
}
