/**
 * Cards read back by OCR (Debian's tesseract-ocr with its models for each script): a title drawn
 * on a card must read back as the text it was drawn from. Unshaped Devanagari read back with a
 * visible virama and split conjuncts (क्षत्रिय as कषतिरिय); shaped, it reads back whole. The
 * comparison is on NFKC forms without spaces, and allows OCR's own slips up to a small rate.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { drawCard } from '../../../renderer/og/draw.ts';

// [tesseract model, title, highest share of characters OCR may get wrong]
const CASES: [string, string, number][] = [
  ['hin', 'क्षत्रिय पृष्ठ कार्ड ब्राउज़र', 0],
  ['hin', 'हर पृष्ठ के लिए तेज़ कार्ड', 0],
  ['tel', 'ప్రతి పేజీకి వేగవంతమైన కార్డులు', 0.05],
  ['khm', 'កាតរហ័សសម្រាប់គ្រប់ទំព័រ', 0.05],
  ['tha', 'การ์ดที่รวดเร็วสำหรับทุกหน้า', 0.05],
];

const plain = (s: string) => [...s.normalize('NFKC').replace(/\s+/gu, '')];

function distance(a: string[], b: string[]): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    row = next;
  }
  return row[b.length]!;
}

const dir = mkdtempSync(path.join(os.tmpdir(), 'og-ocr-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

for (const [model, title, allowed] of CASES) {
  t.test(`${model}: ${title} reads back`, async (t) => {
    const file = path.join(dir, `${model}-${CASES.findIndex((c) => c[1] === title)}.png`);
    writeFileSync(file, drawCard({ template: 'title', theme: 'light', title }));
    const read = execFileSync('tesseract', [file, '-', '-l', model, '--psm', '6'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    const want = plain(title);
    const wrong = distance(plain(read), want);
    t.ok(wrong <= Math.floor(want.length * allowed), `${wrong} of ${want.length} characters misread (read back: ${read.trim()})`);
  });
}
