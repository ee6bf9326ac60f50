/**
 * Sample texts of the OG card in the scripts spec 4.5 rule 6 names, and hostile texts (the kinds below:
 * 120 wide characters, 120 narrow ones, one unbroken 120-character word, mixed scripts, RTL,
 * combining marks, ZWJ, emoji, code points above U+FFFF). Shared by the gallery command, the
 * tests and the benchmark, so all three look at the same cards. Every text is within its ceiling.
 */
import { TEMPLATES, THEMES, type OgCard, type Template, type TextField, type Theme } from './fields.ts';

/** One script's texts for every slot. */
export type SampleTexts = Readonly<Record<TextField, string>>;

/** Texts per script, for the gallery and the goldens. */
export const SCRIPTS: Readonly<Record<string, SampleTexts>> = {
  latin: {
    kicker: 'Release notes',
    title: 'Faster cards for every page you share, drawn in milliseconds',
    subtitle: 'Open Graph images from a few short fields, with no browser and no network.',
    statValue: '98.6%',
    statLabel: 'of cards drawn in under 20 ms',
    start: 'e2',
    target: 'e4',
    hint: 'White to move: the best opening?',
    footer: 'docs.example.com/og',
    brand: 'Tintype',
  },
  cyrillic: {
    kicker: 'Новости',
    title: 'Съешь же ещё этих мягких французских булок, да выпей чаю',
    subtitle: 'Карточки для соцсетей рисуются без браузера и без сети.',
    statValue: '42 ms',
    statLabel: 'среднее время отрисовки',
    start: 'Москва',
    target: 'Казань',
    hint: 'Какой путь короче?',
    footer: 'пример.рф',
    brand: 'Тинтайп',
  },
  greek: {
    kicker: 'Νέα',
    title: 'Ξεσκεπάζω την ψυχοφθόρα βδελυγμία, γρήγορα και όμορφα',
    subtitle: 'Κάρτες για κοινωνικά δίκτυα χωρίς πρόγραμμα περιήγησης.',
    statValue: 'π≈3.14',
    statLabel: 'λόγος περιφέρειας προς διάμετρο',
    start: 'Αθήνα',
    target: 'Σπάρτη',
    hint: 'Ποια διαδρομή;',
    footer: 'παράδειγμα.gr',
    brand: 'Τίντυπ',
  },
  arabic: {
    kicker: 'أخبار',
    title: 'بطاقات سريعة لكل صفحة تشاركها، مرسومة في أجزاء من الثانية',
    subtitle: 'صور للشبكات الاجتماعية من بضعة حقول قصيرة، بلا متصفح وبلا شبكة.',
    statValue: '٩٨٫٦٪',
    statLabel: 'من البطاقات في أقل من 20 ms',
    start: 'القاهرة',
    target: 'دبي',
    hint: 'ما هو أقصر طريق؟',
    footer: 'مثال.com',
    brand: 'تينتايب',
  },
  hebrew: {
    kicker: 'חדשות',
    title: 'כרטיסים מהירים לכל עמוד שאתם משתפים, מצוירים באלפיות שנייה',
    subtitle: 'תמונות לרשתות חברתיות מכמה שדות קצרים, ללא דפדפן וללא רשת.',
    statValue: '99%',
    statLabel: 'מהכרטיסים תוך 20 ms',
    start: 'חיפה',
    target: 'אילת',
    hint: 'איזו דרך קצרה יותר?',
    footer: 'דוגמה.co.il',
    brand: 'טינטייפ',
  },
  devanagari: {
    kicker: 'समाचार',
    title: 'हर पृष्ठ के लिए तेज़ कार्ड, मिलीसेकंड में बनाए गए',
    subtitle: 'बिना ब्राउज़र और बिना नेटवर्क के कुछ छोटे क्षेत्रों से सोशल चित्र।',
    statValue: '१२३४',
    statLabel: 'कार्ड प्रति मिनट',
    start: 'दिल्ली',
    target: 'मुंबई',
    hint: 'कौन सा रास्ता छोटा है?',
    footer: 'उदाहरण.भारत',
    brand: 'टिनटाइप',
  },
  cjk: {
    kicker: 'お知らせ',
    title: '共有するすべてのページに、ミリ秒で描かれる美しいカードを。你好，世界！',
    subtitle: 'ブラウザもネットワークも使わずに、短い文字列から画像を作ります。',
    statValue: '99.9',
    statLabel: '稼働率（過去30日）',
    start: '東京',
    target: '大阪',
    hint: 'どちらが近い？ 어느 쪽이 가까울까요?',
    footer: '例え.jp',
    brand: '活字',
  },
  thai: {
    kicker: 'ข่าว',
    title: 'การ์ดที่รวดเร็วสำหรับทุกหน้าที่คุณแชร์ วาดในเวลาไม่กี่มิลลิวินาที',
    subtitle: 'ภาพสำหรับโซเชียลจากข้อความสั้นๆ ไม่ใช้เบราว์เซอร์และไม่ใช้เครือข่าย',
    statValue: '๙๙%',
    statLabel: 'ของการ์ดภายใน 20 ms',
    start: 'กรุงเทพ',
    target: 'เชียงใหม่',
    hint: 'ทางไหนสั้นกว่า?',
    footer: 'ตัวอย่าง.th',
    brand: 'ทินไทป์',
  },
  emoji: {
    kicker: '🚀 Launch',
    title: 'Ship it 🚢 with family 👨‍👩‍👧‍👦, flags 🇯🇵🇧🇷 and skin tones 👍🏽👋🏿',
    subtitle: 'Keycaps 1️⃣2️⃣3️⃣, hearts ❤️🧡💛 and a cat 🐈‍⬛ on the way.',
    statValue: '🔥99',
    statLabel: 'reactions 🎉 today',
    start: '🏁 go',
    target: '🏆 win',
    hint: 'Which way? 🤔',
    footer: '👀 example.com',
    brand: '✨ Tintype',
  },
};

/** Hostile texts that must never throw, overflow the card or overlap another slot. */
export const HOSTILE: Readonly<Record<string, string>> = {
  wide120: '漢'.repeat(120),
  narrow120: 'i'.repeat(120),
  wideLatin120: 'W'.repeat(120),
  word120: 'Pneumonoultramicroscopicsilicovolcanoconiosis'.repeat(3).slice(0, 120),
  digits120: '8'.repeat(120),
  mixed: 'Hello мир κόσμε שלום مرحبا नमस्ते こんにちは สวัสดี 😀 done',
  rtlMixed: 'שלום world 123 עולם مرحبا 456 بالعالم (نعم) end',
  combining: 'Z̷̢̛a̸̡͙l̶̰͝g̵̣̈o̴͖̐ ẫ́ ệ̈ ḯ ǘ ở ự Ấ Ặ Ễ ç̧̧ n̈̈̈̈ '.repeat(2).trim(),
  zwj: '👩‍💻👨‍🔬🧑‍🚀👩‍❤️‍👨🏳️‍🌈🏴‍☠️🐻‍❄️'.repeat(5),
  emoji120: '😀'.repeat(120),
  astral: '𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝒮𝒸𝓇𝒾𝓅𝓉 𓀀𓁐𓂀 𐌰𐌱𐌲 𠀀𠀁𠀂 🀄🃏 '.repeat(3).trim(),
  spaces: 'a b c d e f g h i j k l m n o p q r s t u v w x y z '.repeat(3).trim(),
  punctuation: '—…“”‘’«»‹›¡¿•·°±×÷§¶†‡‰′″‴⁂№™℮←↑→↓↔↕⇒⇔∀∂∃∅∇∈∉∋∏∑−∓∕∗∘√∝∞∟∠∧∨∩∪∫',
};

/** The text of `field` at its ceiling made from `unit` repeated (a code point or grapheme). */
export function atCeiling(unit: string, ceiling: number): string {
  const cps = [...unit];
  const out: string[] = [];
  while (out.length + cps.length <= ceiling) out.push(...cps);
  return out.join('');
}

/** A card of a template with every slot it draws filled from `texts`. */
export function fullCard(template: Template, theme: Theme, texts: SampleTexts): OgCard {
  const base = { template, theme, title: texts.title, footer: texts.footer, brand: texts.brand };
  if (template === 'title') return { ...base, kicker: texts.kicker, subtitle: texts.subtitle };
  if (template === 'stat') return { ...base, kicker: texts.kicker, statValue: texts.statValue, statLabel: texts.statLabel };
  return { ...base, subtitle: texts.subtitle, start: texts.start, target: texts.target, hint: texts.hint };
}

/** A card of a template with its required slots only. */
export function minimalCard(template: Template, theme: Theme, texts: SampleTexts): OgCard {
  if (template === 'title') return { template, theme, title: texts.title };
  if (template === 'stat') return { template, theme, title: texts.title, statValue: texts.statValue, statLabel: texts.statLabel };
  return { template, theme, title: texts.title, start: texts.start, target: texts.target };
}

/** Every template × theme × script, full and minimal, plus hostile texts in every slot. */
export function galleryCards(): { name: string; card: OgCard }[] {
  const out: { name: string; card: OgCard }[] = [];
  for (const template of TEMPLATES) {
    for (const theme of THEMES) {
      for (const [script, texts] of Object.entries(SCRIPTS)) {
        out.push({ name: `${template}-${theme}-${script}`, card: fullCard(template, theme, texts) });
      }
      out.push({ name: `${template}-${theme}-minimal`, card: minimalCard(template, theme, SCRIPTS.latin!) });
    }
    for (const [name, text] of Object.entries(HOSTILE)) {
      out.push({ name: `${template}-dark-hostile-${name}`, card: fullCard(template, 'dark', hostileTexts(text)) });
    }
  }
  return out;
}

/** Every slot filled with `text` cut to the slot's ceiling. */
export function hostileTexts(text: string): SampleTexts {
  const cut = (n: number) => [...text].slice(0, n).join('');
  return {
    title: cut(120), subtitle: cut(160), kicker: cut(40), statValue: cut(6), statLabel: cut(60),
    start: cut(12), target: cut(12), hint: cut(60), footer: cut(40), brand: cut(40),
  };
}
