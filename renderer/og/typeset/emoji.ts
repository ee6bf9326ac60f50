/**
 * Colour emoji (spec 4.5 rule 6) drawn as images: pureimage draws outlines only, so emoji come
 * from the npm package emoji-datasource-google (Noto Color Emoji artwork as 64 px PNG files, one
 * per sequence, named by code points in hex joined by "-": ZWJ sequences, skin tones, keycaps
 * and flags each have their own file). Files are read, decoded and scaled on first use and cached.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { decodePng, type RgbaImage } from './png.ts';

const require = createRequire(import.meta.url);
const DIR = path.join(path.dirname(require.resolve('emoji-datasource-google/package.json')), 'img/google/64');

const VS16 = 0xfe0f;
const ZWJ = 0x200d;
const PRESENTATION = /\p{Emoji_Presentation}|\uFE0F|\p{Regional_Indicator}/u;
const PICTOGRAPHIC = /\p{Extended_Pictographic}|\p{Regional_Indicator}|\u20e3/u;

let index: Map<string, string> | undefined;

// Files are looked up without variation selectors, which text often leaves out or adds.
function keyOf(codePoints: readonly number[]): string {
  return codePoints.filter((cp) => cp !== VS16).map((cp) => cp.toString(16)).join('-');
}

function files(): Map<string, string> {
  if (index !== undefined) return index;
  index = new Map();
  for (const file of readdirSync(DIR)) {
    if (!file.endsWith('.png')) continue;
    const cps = file.slice(0, -4).split('-').map((h) => parseInt(h, 16));
    const key = keyOf(cps);
    if (!index.has(key)) index.set(key, file);
  }
  return index;
}

/**
 * The image files that draw one grapheme cluster as colour emoji, or undefined when the cluster
 * is text. A ZWJ sequence without its own image is drawn as its parts, as platforms do.
 */
export function emojiFiles(cluster: string): string[] | undefined {
  if (!PICTOGRAPHIC.test(cluster) || !PRESENTATION.test(cluster)) return undefined;
  const cps = [...cluster].map((c) => c.codePointAt(0)!);
  const all = files();
  const whole = all.get(keyOf(cps));
  if (whole !== undefined) return [whole];
  const parts: string[] = [];
  let current: number[] = [];
  const flush = () => {
    if (current.length === 0) return;
    const file = all.get(keyOf(current)) ?? all.get(keyOf(current.slice(0, 1)));
    if (file !== undefined) parts.push(file);
    current = [];
  };
  for (const cp of cps) {
    if (cp === ZWJ) flush();
    else current.push(cp);
  }
  flush();
  return parts.length > 0 ? parts : undefined;
}

// Both caches are bounded in bytes (memory): text of many different
// emoji would otherwise keep every image decoded at every size for the thread's life. Past the
// bound a cache starts over.
const MAX_DECODED_BYTES = 8 * 1024 * 1024;
const MAX_SCALED_BYTES = 16 * 1024 * 1024;
const decoded = new Map<string, RgbaImage>();
const scaled = new Map<string, RgbaImage>();
let decodedBytes = 0;
let scaledBytes = 0;

/** The emoji image scaled to `size` pixels square, cached per file and size. */
export function emojiImage(file: string, size: number): RgbaImage {
  const key = `${file}@${size}`;
  let image = scaled.get(key);
  if (image !== undefined) return image;
  let source = decoded.get(file);
  if (source === undefined) {
    source = decodePng(readFileSync(path.join(DIR, file)));
    if (decodedBytes + source.data.length > MAX_DECODED_BYTES) {
      decoded.clear();
      decodedBytes = 0;
    }
    decoded.set(file, source);
    decodedBytes += source.data.length;
  }
  image = resample(source, size);
  if (scaledBytes + image.data.length > MAX_SCALED_BYTES) {
    scaled.clear();
    scaledBytes = 0;
  }
  scaled.set(key, image);
  scaledBytes += image.data.length;
  return image;
}

// Area-averaged resampling with premultiplied alpha, so edges stay clean at every size.
function resample(src: RgbaImage, size: number): RgbaImage {
  const out = new Uint8Array(size * size * 4);
  const k = Math.max(1, Math.ceil(src.width / size));
  const step = src.width / size / k;
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      let r = 0;
      let g = 0;
      let b = 0;
      let a = 0;
      for (let j = 0; j < k; j++) {
        const sy = Math.min(src.height - 1, Math.floor((y * k + j + 0.5) * step));
        for (let i = 0; i < k; i++) {
          const sx = Math.min(src.width - 1, Math.floor((x * k + i + 0.5) * step));
          const s = (sy * src.width + sx) * 4;
          const sa = src.data[s + 3]!;
          r += src.data[s]! * sa;
          g += src.data[s + 1]! * sa;
          b += src.data[s + 2]! * sa;
          a += sa;
        }
      }
      const o = (y * size + x) * 4;
      if (a > 0) {
        out[o] = r / a;
        out[o + 1] = g / a;
        out[o + 2] = b / a;
        out[o + 3] = a / (k * k);
      }
    }
  }
  return { width: size, height: size, data: out };
}
