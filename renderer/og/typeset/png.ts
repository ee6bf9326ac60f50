/**
 * PNG encoding and decoding with node:zlib. The card is encoded as 8-bit RGB rows with no
 * filter at deflate level 2: the card's long runs of one colour and its rows that repeat the
 * ground deflate well as they are, so this is both faster and smaller than the Sub filter at
 * level 4 (measured on the gallery cards: about half the CPU time, 6% fewer bytes), and several
 * times quicker than pureimage's pngjs path (speed: docs/performance.md). Level 1 and 3, Z_RLE
 * and Z_FILTERED, the Sub and Up filters and RGBA rows were measured on the cards too: none is
 * quicker by more than the noise, and the filters and RLE make the file 20-40% larger.
 *
 * Deflate pays for every byte it reads, even in rows that repeat: the empty ground alone took
 * half of a card's deflate time, and half of a card's rows are ground. So rows equal to a known
 * ground are not deflated (or packed) per card: a run of them is deflated once per ground and
 * its bytes kept. The zlib stream is written as raw deflate
 * pieces, each flushed to a byte boundary so they join end to end (RFC 1951 3.2.3: a block
 * starts where the last ended), then an empty final block, and the Adler-32 of all the rows
 * (RFC 1950), folded from each row's byte sums taken while packing it.
 * The decoder reads the emoji images and the test goldens: 8-bit, non-interlaced.
 */
import { endianness } from 'node:os';
import * as zlib from 'node:zlib';
import { deflateRawSync, inflateSync } from 'node:zlib';
import { nextRun } from './row-runs.ts';

const LITTLE_ENDIAN = endianness() === 'LE';
const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

const CRC_TABLE = (() => {
  const table = new Int32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c;
  }
  return table;
})();

// node:zlib's own CRC-32 where the Node version has it (20.15 and later), else the table's.
const nativeCrc32 = (zlib as { crc32?: (data: Uint8Array) => number }).crc32;

function crc32(bytes: Uint8Array, start: number, end: number): number {
  if (nativeCrc32 !== undefined) return nativeCrc32(bytes.subarray(start, end)) >>> 0;
  let c = -1;
  for (let i = start; i < end; i++) c = CRC_TABLE[(c ^ bytes[i]!) & 0xff]! ^ (c >>> 8);
  return (c ^ -1) >>> 0;
}

/** Writes a chunk header (length, type) at `at` for data of `length` bytes; returns where the data goes. */
function chunkHeader(out: Buffer, at: number, type: string, length: number): number {
  out.writeUInt32BE(length, at);
  out.write(type, at + 4, 'latin1');
  return at + 8;
}

/** Writes the CRC of the chunk whose header is at `at`; returns where the next chunk begins. */
function chunkCrc(out: Buffer, at: number): number {
  const end = at + 8 + out.readUInt32BE(at);
  out.writeUInt32BE(crc32(out, at + 4, end), end);
  return end + 4;
}

const ADLER_BASE = 65521;

/**
 * Adler-32 of bytes appended in spans, each known by its length, its byte sum and its sum of
 * bytes weighted by how many bytes follow them, counting themselves (RFC 1950 8.2: `b` adds `a`
 * after every byte). Started at (0, 0) it gives a span's own sums, to append as one later.
 */
class Adler {
  constructor(public a = 1, public b = 0) {}

  append(length: number, sum: number, weighted: number): void {
    this.b = (this.b + length * this.a + weighted) % ADLER_BASE;
    this.a = (this.a + sum) % ADLER_BASE;
  }
}

// Rows handed to deflate and the sums of the row last packed, kept from card to card (one card
// is encoded at a time per thread; deflate reads them synchronously), and one row of packed words.
let rows: Buffer | undefined;
let rowWords = new Uint32Array(0);
let rowBytes = new Uint8Array(0);
// Of the row last packed: its byte sum and its sum weighted by position (filter byte first).
let rowSum = 0;
let rowWeighted = 0;
// Of the row being packed, per pixel k with s = r + g + b: `sumTotal` sums s, `sumRun` the running
// total (Σ (width - k) s), `sumInner` g + 2b (the channels' places within their pixel).
let sumTotal = 0;
let sumRun = 0;
let sumInner = 0;

/**
 * Packs row `y` of RGBA pixels as RGB into `out` at `at` (after its filter byte), four pixels
 * (four words) into three words at a time: a row of 1200 pixels is 900 words written, not 3600
 * bytes. Sums its bytes on the way for Adler-32 (`rowSum`, `rowWeighted`).
 */
function packRow(rgba: Uint8Array, pixels: Uint32Array, width: number, y: number, out: Buffer, at: number): void {
  const words = rowWords;
  const whole = width & ~3;
  let o = 0;
  let i = y * width;
  // The row's running sums (sumTotal, sumRun, sumInner above), kept in locals in this loop.
  let total = 0;
  let run = 0;
  let inner = 0;
  for (const end = i + whole; i < end; i += 4, o += 3) {
    const a = pixels[i]!;
    const b = pixels[i + 1]!;
    const c = pixels[i + 2]!;
    const d = pixels[i + 3]!;
    words[o] = (a & 0xffffff) | (b << 24);
    words[o + 1] = ((b >>> 8) & 0xffff) | (c << 16);
    words[o + 2] = ((c >>> 16) & 0xff) | (d << 8);
    const ga = (a >>> 8) & 0xff, ba = (a >>> 16) & 0xff;
    const gb = (b >>> 8) & 0xff, bb = (b >>> 16) & 0xff;
    const gc = (c >>> 8) & 0xff, bc = (c >>> 16) & 0xff;
    const gd = (d >>> 8) & 0xff, bd = (d >>> 16) & 0xff;
    const sa = (a & 0xff) + ga + ba;
    const sb = (b & 0xff) + gb + bb;
    const sc = (c & 0xff) + gc + bc;
    const sd = (d & 0xff) + gd + bd;
    run += 4 * total + 4 * sa + 3 * sb + 2 * sc + sd;
    total += sa + sb + sc + sd;
    inner += ga + gb + gc + gd + 2 * (ba + bb + bc + bd);
  }
  out.set(rowBytes, at);
  sumTotal = total;
  sumRun = run;
  sumInner = inner;
  // The last width % 4 pixels, a byte at a time.
  packPixelBytes(rgba, i * 4, width - whole, out, at + whole * 3);
  rowSums(width);
}

/** Packs a row a byte at a time (pixels not on a word boundary, or a big-endian machine). */
function packRowBytes(rgba: Uint8Array, width: number, y: number, out: Buffer, at: number): void {
  sumTotal = 0;
  sumRun = 0;
  sumInner = 0;
  packPixelBytes(rgba, y * width * 4, width, out, at);
  rowSums(width);
}

/** Packs `count` RGBA pixels from byte `i` as RGB into `out` at `p`, carrying the row's running sums on. */
function packPixelBytes(rgba: Uint8Array, i: number, count: number, out: Buffer, p: number): void {
  let total = sumTotal;
  let run = sumRun;
  let inner = sumInner;
  for (let x = 0; x < count; x++, i += 4, p += 3) {
    const r = rgba[i]!, g = rgba[i + 1]!, b = rgba[i + 2]!;
    out[p] = r;
    out[p + 1] = g;
    out[p + 2] = b;
    total += r + g + b;
    run += total;
    inner += g + 2 * b;
  }
  sumTotal = total;
  sumRun = run;
  sumInner = inner;
}

// A row is n = 3 * width + 1 bytes, the filter byte (0) first and pixel k's channel c at
// 1 + 3k + c. Its weighted sum Σ (n - j) x_j is n·total - Σ j x_j, and Σ j x_j over the pixels
// is Σ (1 + 3k) s_k + inner = total + 3 (width·total - run) + inner.
function rowSums(width: number): void {
  const n = 3 * width + 1;
  rowSum = sumTotal;
  rowWeighted = n * sumTotal - (sumTotal + 3 * (width * sumTotal - sumRun) + sumInner);
}

/** Raw deflate bytes of whole rows ending on a byte boundary, and their Adler-32 sums. */
interface Piece {
  bytes: Buffer;
  length: number;
  sum: number;
  weighted: number;
}

/** Packs rows [y0, y1) and deflates them into a piece. */
function deflateRows(rgba: Uint8Array, width: number, y0: number, y1: number, level: number): Piece {
  const stride = width * 3 + 1;
  if (rows === undefined || rows.length < stride * (y1 - y0)) rows = Buffer.allocUnsafe(stride * (y1 - y0));
  const sums = new Adler(0, 0);
  const words = LITTLE_ENDIAN && rgba.byteOffset % 4 === 0;
  const pixels = words ? new Uint32Array(rgba.buffer, rgba.byteOffset, (rgba.length / 4) | 0) : undefined;
  if (words && rowBytes.length !== (width & ~3) * 3) {
    rowWords = new Uint32Array(((width & ~3) * 3) / 4);
    rowBytes = new Uint8Array(rowWords.buffer);
  }
  for (let y = y0; y < y1; y++) {
    const at = (y - y0) * stride;
    rows[at] = 0; // filter type None
    if (pixels !== undefined) packRow(rgba, pixels, width, y, rows, at + 1);
    else packRowBytes(rgba, width, y, rows, at + 1);
    sums.append(stride, rowSum, rowWeighted);
  }
  // A sync flush ends the piece with an empty stored block: byte-aligned, not final.
  const bytes = deflateRawSync(rows.subarray(0, stride * (y1 - y0)), { level, finishFlush: zlib.constants.Z_SYNC_FLUSH });
  return { bytes, length: stride * (y1 - y0), sum: sums.a, weighted: sums.b };
}

// Rows of the ground shorter than this are deflated with the rows around them: a piece costs a
// zlib call and its own Huffman tables, so a few ground rows between lines of text are cheaper
// deflated again than looked up.
export const MIN_GROUND_ROWS = 8;
// Pieces of ground kept per ground image (a few layouts' worth); the map starts over past this.
const MAX_GROUND_PIECES = 256;
const groundPieces = new WeakMap<Uint8Array, Map<string, Piece>>();

function groundPiece(ground: Uint8Array, width: number, y0: number, y1: number, level: number): Piece {
  let pieces = groundPieces.get(ground);
  if (pieces === undefined) {
    pieces = new Map();
    groundPieces.set(ground, pieces);
  }
  const key = `${width}|${y0}|${y1}|${level}`;
  let piece = pieces.get(key);
  if (piece === undefined) {
    piece = deflateRows(ground, width, y0, y1, level);
    if (pieces.size >= MAX_GROUND_PIECES) pieces.clear();
    pieces.set(key, piece);
  }
  return piece;
}

// An empty final block with fixed codes (BFINAL 1, BTYPE 01, end-of-block code 0000000).
const FINAL_BLOCK = Buffer.from([0x03, 0x00]);
// zlib header: deflate with a 32 KiB window, no dictionary, "fast" level (RFC 1950 2.2).
const ZLIB_HEADER = Buffer.from([0x78, 0x5e]);

/** How to encode: the deflate level, and the ground most rows of the image are copies of. */
export interface PngOptions {
  /** Deflate level; 2 unless told (see above). */
  level?: number;
  /** An image of the same size; runs of rows equal to its rows are deflated once and reused. */
  ground?: Uint8Array;
  /** Rows that may differ from the ground (1 a row); the others are known to equal it. */
  drawnRows?: Uint8Array;
}

/** Encodes RGBA pixels (alpha ignored: the card is opaque) as an RGB PNG. */
export function encodePng(rgba: Uint8Array, width: number, height: number, options: PngOptions = {}): Buffer {
  const { level = 2, ground, drawnRows } = options;
  const pieces: Buffer[] = [ZLIB_HEADER];
  const adler = new Adler();
  const add = (p: Piece) => {
    pieces.push(p.bytes);
    adler.append(p.length, p.sum, p.weighted);
  };
  const same = ground !== undefined && ground.length === rgba.length ? sameRows(rgba, ground, width, height, drawnRows) : undefined;
  for (let y = 0; y < height; ) {
    const [g0, g1] = same === undefined ? [height, height] : nextRun(same, y, MIN_GROUND_ROWS);
    if (g0 > y) add(deflateRows(rgba, width, y, g0, level));
    if (g1 > g0) add(groundPiece(ground!, width, g0, g1, level));
    y = g1;
  }
  pieces.push(FINAL_BLOCK);
  let idatLength = 4;
  for (const p of pieces) idatLength += p.length;

  const png = Buffer.allocUnsafe(SIGNATURE.length + 3 * 12 + 13 + idatLength);
  png.set(SIGNATURE, 0);
  let at = chunkHeader(png, SIGNATURE.length, 'IHDR', 13);
  png.writeUInt32BE(width, at);
  png.writeUInt32BE(height, at + 4);
  png[at + 8] = 8; // bit depth
  png[at + 9] = 2; // colour type RGB
  png[at + 10] = 0; // deflate
  png[at + 11] = 0; // filtering per row
  png[at + 12] = 0; // not interlaced
  at = chunkCrc(png, SIGNATURE.length);
  const idat = at;
  let p = chunkHeader(png, idat, 'IDAT', idatLength);
  for (const piece of pieces) {
    png.set(piece, p);
    p += piece.length;
  }
  png.writeUInt32BE(((adler.b << 16) | adler.a) >>> 0, p);
  at = chunkCrc(png, idat);
  chunkHeader(png, at, 'IEND', 0);
  chunkCrc(png, at);
  return png;
}

/** 1 for each row of `rgba` equal to the same row of `ground` (rows not drawn on are, unread). */
function sameRows(rgba: Uint8Array, ground: Uint8Array, width: number, height: number, drawn: Uint8Array | undefined): Uint8Array {
  const a = Buffer.from(rgba.buffer, rgba.byteOffset, rgba.byteLength);
  const b = Buffer.from(ground.buffer, ground.byteOffset, ground.byteLength);
  const out = new Uint8Array(height);
  const row = width * 4;
  for (let y = 0; y < height; y++) {
    out[y] = drawn?.[y] === 0 || a.compare(b, y * row, (y + 1) * row, y * row, (y + 1) * row) === 0 ? 1 : 0;
  }
  return out;
}

/** A decoded image: RGBA, 8 bits per channel, not premultiplied. */
export interface RgbaImage {
  width: number;
  height: number;
  data: Uint8Array;
}

const CHANNELS: Record<number, number> = { 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 };

function paeth(a: number, b: number, c: number): number {
  const p = a + b - c;
  const pa = Math.abs(p - a);
  const pb = Math.abs(p - b);
  const pc = Math.abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/** Decodes an 8-bit, non-interlaced PNG of any colour type into RGBA. */
export function decodePng(file: Uint8Array): RgbaImage {
  const buf = Buffer.from(file.buffer, file.byteOffset, file.byteLength);
  if (!buf.subarray(0, 8).equals(SIGNATURE)) throw new Error('not a PNG');
  let width = 0;
  let height = 0;
  let colourType = 0;
  let palette: Uint8Array | undefined;
  let transparency: Uint8Array | undefined;
  const idat: Buffer[] = [];
  for (let p = 8; p < buf.length; ) {
    const length = buf.readUInt32BE(p);
    const type = buf.toString('latin1', p + 4, p + 8);
    const data = buf.subarray(p + 8, p + 8 + length);
    if (type === 'IHDR') {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      colourType = data[9]!;
      if (data[8] !== 8 || data[12] !== 0) throw new Error('only 8-bit non-interlaced PNG is read');
    } else if (type === 'PLTE') palette = data;
    else if (type === 'tRNS') transparency = data;
    else if (type === 'IDAT') idat.push(data);
    else if (type === 'IEND') break;
    p += 12 + length;
  }
  const channels = CHANNELS[colourType];
  if (channels === undefined) throw new Error(`unknown PNG colour type ${colourType}`);
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  const pixels = new Uint8Array(stride * height);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)]!;
    const src = y * (stride + 1) + 1;
    const dst = y * stride;
    for (let x = 0; x < stride; x++) {
      const a = x >= channels ? pixels[dst + x - channels]! : 0;
      const b = y > 0 ? pixels[dst - stride + x]! : 0;
      const c = x >= channels && y > 0 ? pixels[dst - stride + x - channels]! : 0;
      const v = raw[src + x]!;
      pixels[dst + x] =
        filter === 0 ? v
        : filter === 1 ? v + a
        : filter === 2 ? v + b
        : filter === 3 ? v + ((a + b) >> 1)
        : v + paeth(a, b, c);
    }
  }
  const data = new Uint8Array(width * height * 4);
  for (let i = 0, o = 0; i < width * height; i++, o += 4) {
    const s = i * channels;
    if (colourType === 6) {
      data[o] = pixels[s]!; data[o + 1] = pixels[s + 1]!; data[o + 2] = pixels[s + 2]!; data[o + 3] = pixels[s + 3]!;
    } else if (colourType === 2) {
      data[o] = pixels[s]!; data[o + 1] = pixels[s + 1]!; data[o + 2] = pixels[s + 2]!; data[o + 3] = 255;
    } else if (colourType === 4) {
      data[o] = data[o + 1] = data[o + 2] = pixels[s]!; data[o + 3] = pixels[s + 1]!;
    } else if (colourType === 0) {
      data[o] = data[o + 1] = data[o + 2] = pixels[s]!; data[o + 3] = 255;
    } else {
      const index = pixels[s]!;
      data[o] = palette?.[index * 3] ?? 0; data[o + 1] = palette?.[index * 3 + 1] ?? 0; data[o + 2] = palette?.[index * 3 + 2] ?? 0;
      data[o + 3] = transparency?.[index] ?? 255;
    }
  }
  return { width, height, data };
}
