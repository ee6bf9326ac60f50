/**
 * Arabic joining without a shaping engine (spec 4.5 rule 6: Arabic must read, not just show).
 * pureimage's font reader applies no OpenType substitutions, so each letter would be drawn in
 * its isolated form and words would fall apart. Letters are instead replaced by their
 * contextual presentation forms (Unicode blocks FE70-FEFF and FB50-FDFF, which the Arabic
 * fallback face maps), and lam + alef by their obligatory ligature, following the joining
 * types of Unicode's ArabicShaping data for the letters listed here.
 */

// Forms in the order isolated, final, initial, medial. Two forms: the letter joins only to the
// letter before it (right-joining); four: to both sides (dual-joining); one: never joins.
const FORMS = new Map<number, readonly number[]>();

function range(letter: number, first: number, count: number): void {
  FORMS.set(letter, Array.from({ length: count }, (_, i) => first + i));
}

// Presentation forms B, letter by letter in code point order.
const TABLE: readonly [number, number, number][] = [
  [0x0621, 0xfe80, 1], [0x0622, 0xfe81, 2], [0x0623, 0xfe83, 2], [0x0624, 0xfe85, 2],
  [0x0625, 0xfe87, 2], [0x0626, 0xfe89, 4], [0x0627, 0xfe8d, 2], [0x0628, 0xfe8f, 4],
  [0x0629, 0xfe93, 2], [0x062a, 0xfe95, 4], [0x062b, 0xfe99, 4], [0x062c, 0xfe9d, 4],
  [0x062d, 0xfea1, 4], [0x062e, 0xfea5, 4], [0x062f, 0xfea9, 2], [0x0630, 0xfeab, 2],
  [0x0631, 0xfead, 2], [0x0632, 0xfeaf, 2], [0x0633, 0xfeb1, 4], [0x0634, 0xfeb5, 4],
  [0x0635, 0xfeb9, 4], [0x0636, 0xfebd, 4], [0x0637, 0xfec1, 4], [0x0638, 0xfec5, 4],
  [0x0639, 0xfec9, 4], [0x063a, 0xfecd, 4], [0x0641, 0xfed1, 4], [0x0642, 0xfed5, 4],
  [0x0643, 0xfed9, 4], [0x0644, 0xfedd, 4], [0x0645, 0xfee1, 4], [0x0646, 0xfee5, 4],
  [0x0647, 0xfee9, 4], [0x0648, 0xfeed, 2], [0x0649, 0xfeef, 2], [0x064a, 0xfef1, 4],
  // Presentation forms A: the Persian and Urdu letters in common use.
  [0x067e, 0xfb56, 4], [0x0686, 0xfb7a, 4], [0x0698, 0xfb8a, 2], [0x06a9, 0xfb8e, 4],
  [0x06af, 0xfb92, 4], [0x06cc, 0xfbfc, 4],
];
for (const [letter, first, count] of TABLE) range(letter, first, count);

const TATWEEL = 0x0640;
const LAM = 0x0644;
// Lam followed by these alefs becomes one ligature: [isolated, final].
const LAM_ALEF = new Map<number, readonly [number, number]>([
  [0x0622, [0xfef5, 0xfef6]],
  [0x0623, [0xfef7, 0xfef8]],
  [0x0625, [0xfef9, 0xfefa]],
  [0x0627, [0xfefb, 0xfefc]],
]);

// Marks that sit on a letter and are skipped when looking for the neighbours that join.
function isTransparent(cp: number): boolean {
  return (cp >= 0x0610 && cp <= 0x061a) || (cp >= 0x064b && cp <= 0x065f) || cp === 0x0670 ||
    (cp >= 0x06d6 && cp <= 0x06dc) || (cp >= 0x06df && cp <= 0x06e4) || cp === 0x06e7 || cp === 0x06e8 ||
    (cp >= 0x06ea && cp <= 0x06ed);
}

function joinsToNext(cp: number | undefined): boolean {
  return cp === TATWEEL || (cp !== undefined && FORMS.get(cp)?.length === 4);
}

function joinsToPrevious(cp: number | undefined): boolean {
  return cp === TATWEEL || (cp !== undefined && (FORMS.get(cp)?.length ?? 0) >= 2);
}

/** Whether the text holds a letter this module shapes (fast exit for all other text). */
export function hasArabicLetters(text: string): boolean {
  return /[\u0621-\u064a\u067e\u0686\u0698\u06a9\u06af\u06cc]/.test(text);
}

/**
 * Replaces Arabic letters by their contextual forms. `available` says whether a face can draw
 * a form; a letter whose form no face has keeps its plain code point (drawn unjoined).
 */
export function joinArabic(text: string, available: (cp: number) => boolean): string {
  if (!hasArabicLetters(text)) return text;
  const cps = [...text].map((c) => c.codePointAt(0)!);
  const out: number[] = [];
  const neighbour = (from: number, step: 1 | -1): number | undefined => {
    for (let i = from + step; i >= 0 && i < cps.length; i += step) {
      if (!isTransparent(cps[i]!)) return cps[i];
    }
    return undefined;
  };
  for (let i = 0; i < cps.length; i++) {
    const cp = cps[i]!;
    const forms = FORMS.get(cp);
    if (forms === undefined) {
      out.push(cp);
      continue;
    }
    const previous = neighbour(i, -1);
    const joinedBefore = joinsToNext(previous);
    if (cp === LAM) {
      const nextIndex = i + 1;
      const ligature = LAM_ALEF.get(cps[nextIndex] ?? 0);
      if (ligature !== undefined) {
        const form = ligature[joinedBefore ? 1 : 0];
        if (available(form)) {
          out.push(form);
          i = nextIndex;
          continue;
        }
      }
    }
    const joinedAfter = forms.length === 4 && joinsToPrevious(neighbour(i, 1));
    const index = forms.length === 1 ? 0
      : joinedBefore && joinedAfter ? 3
      : joinedAfter ? 2
      : joinedBefore ? 1
      : 0;
    const form = forms[Math.min(index, forms.length - 1)]!;
    out.push(available(form) ? form : cp);
  }
  return String.fromCodePoint(...out);
}
