/**
 * The Unicode script of a code point (the Script property, as Node's ICU knows it), for picking
 * a face per run of text and for counting characters no face can draw, by script.
 */

/**
 * Script property values: first those with code points in the Basic Multilingual Plane, then
 * those only above it (historic scripts, most with a Noto face too).
 */
export const SCRIPT_NAMES = [
  'Latin', 'Greek', 'Cyrillic', 'Armenian', 'Hebrew', 'Arabic', 'Syriac', 'Thaana', 'Nko', 'Samaritan',
  'Mandaic', 'Devanagari', 'Bengali', 'Gurmukhi', 'Gujarati', 'Oriya', 'Tamil', 'Telugu', 'Kannada',
  'Malayalam', 'Sinhala', 'Thai', 'Lao', 'Tibetan', 'Myanmar', 'Georgian', 'Hangul', 'Ethiopic',
  'Cherokee', 'Canadian_Aboriginal', 'Ogham', 'Runic', 'Tagalog', 'Hanunoo', 'Buhid', 'Tagbanwa',
  'Khmer', 'Mongolian', 'Limbu', 'Tai_Le', 'New_Tai_Lue', 'Buginese', 'Tai_Tham', 'Balinese',
  'Sundanese', 'Batak', 'Lepcha', 'Ol_Chiki', 'Braille', 'Glagolitic', 'Coptic', 'Tifinagh',
  'Han', 'Hiragana', 'Katakana', 'Bopomofo', 'Yi', 'Lisu', 'Vai', 'Bamum', 'Syloti_Nagri', 'Phags_Pa',
  'Saurashtra', 'Kayah_Li', 'Rejang', 'Javanese', 'Cham', 'Tai_Viet', 'Meetei_Mayek', 'Inherited',
  'Linear_B', 'Lycian', 'Carian', 'Old_Italic', 'Gothic', 'Old_Permic', 'Ugaritic', 'Old_Persian', 'Deseret',
  'Shavian', 'Osmanya', 'Osage', 'Elbasan', 'Caucasian_Albanian', 'Linear_A', 'Cypriot', 'Imperial_Aramaic',
  'Palmyrene', 'Nabataean', 'Hatran', 'Phoenician', 'Lydian', 'Meroitic_Cursive', 'Kharoshthi',
  'Old_South_Arabian', 'Old_North_Arabian', 'Manichaean', 'Avestan', 'Inscriptional_Parthian',
  'Inscriptional_Pahlavi', 'Psalter_Pahlavi', 'Old_Turkic', 'Old_Hungarian', 'Hanifi_Rohingya', 'Old_Sogdian',
  'Sogdian', 'Elymaic', 'Brahmi', 'Kaithi', 'Sora_Sompeng', 'Chakma', 'Mahajani', 'Sharada', 'Khojki',
  'Multani', 'Khudawadi', 'Grantha', 'Newa', 'Tirhuta', 'Siddham', 'Modi', 'Takri', 'Warang_Citi',
  'Zanabazar_Square', 'Soyombo', 'Pau_Cin_Hau', 'Bhaiksuki', 'Marchen', 'Masaram_Gondi', 'Gunjala_Gondi',
  'Cuneiform', 'Egyptian_Hieroglyphs', 'Anatolian_Hieroglyphs', 'Mro', 'Bassa_Vah', 'Pahawh_Hmong',
  'Medefaidrin', 'Miao', 'Nushu', 'Duployan', 'SignWriting', 'Wancho', 'Mende_Kikakui', 'Adlam',
] as const;

const TESTS = SCRIPT_NAMES.map((name) => ({ name, re: new RegExp(`^\\p{Script=${name}}$`, 'u') }));
const known = new Map<number, string>();

/**
 * The script of a code point: one of SCRIPT_NAMES, `Common` (digits, punctuation, symbols
 * shared by scripts) or `Other` (scripts above the BMP and unassigned code points).
 */
export function scriptOf(cp: number): string {
  if (cp < 0x41) return 'Common';
  if (cp < 0x250) return /[A-Za-z\u00aa\u00ba\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f]/.test(String.fromCharCode(cp)) ? 'Latin' : 'Common';
  let s = known.get(cp);
  if (s === undefined) {
    const ch = String.fromCodePoint(cp);
    s = TESTS.find((t) => t.re.test(ch))?.name ?? (/^\p{Script=Common}$/u.test(ch) ? 'Common' : 'Other');
    known.set(cp, s);
  }
  return s;
}

/** Whether text in the script is written right to left. */
export function isRtlScript(script: string): boolean {
  return script === 'Hebrew' || script === 'Arabic' || script === 'Syriac' || script === 'Thaana' ||
    script === 'Nko' || script === 'Samaritan' || script === 'Mandaic';
}
