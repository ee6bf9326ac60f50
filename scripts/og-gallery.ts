/**
 * `npm run og:gallery [-- <folder>]`: draws every OG template × theme × a set of scripts and
 * hostile texts as PNG files, default `gallery/` (git-ignored), so a person can look
 * at them. The texts are the ones the golden and pixel tests use (renderer/og/samples.ts).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { drawCard } from '../renderer/og/draw.ts';
import { galleryCards } from '../renderer/og/samples.ts';

const folder = path.resolve(process.argv[2] ?? 'gallery');
mkdirSync(folder, { recursive: true });
let n = 0;
for (const { name, card } of galleryCards()) {
  writeFileSync(path.join(folder, `${name}.png`), drawCard(card));
  n++;
}
console.log(`og:gallery: ${n} cards in ${folder}`);
