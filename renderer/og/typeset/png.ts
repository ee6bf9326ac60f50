/**
 * PNG encoding and decoding with node:zlib. The card is encoded as 8-bit RGB rows with no
 * filter at deflate level 2: the card's long runs of one colour and its rows that repeat the
 * ground deflate well as they are, so this is both faster and smaller than the Sub filter at
 * level 4 (measured on the gallery cards: about half the CPU time, 6% fewer bytes), and several
 * times quicker than pureimage's pngjs path (speed: docs/performance.md). Level 1 and 3, Z_RLE
 * and Z_FILTERED, the Sub and Up filters and RGBA rows were measured on the cards too: none is
 * quicker by more than the noise, and the filters and RLE make the file 20-40% larger. What is
 * left of the encoding is deflate itself (about 2 ms a card) and packing the rows (0.4 ms).
 * The decoder reads the emoji images and the test goldens: 8-bit, non-interlaced.
 */
import { endianness } from 'node:os';
import * as zlib from 'node:zlib';
import { deflateSync, inflateSync } from 'node:zlib';

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

/** Writes a chunk (length, type, data, CRC) into `out` at `at`; returns where the next begins. */
function writeChunk(out: Buffer, at: number, type: string, data: Uint8Array): number {
  out.writeUInt32BE(data.length, at);
  out.write(type, at + 4, 'latin1');
  out.set(data, at + 8);
  out.writeUInt32BE(crc32(out, at + 4, at + 8 + data.length), at + 8 + data.length);
  return at + 12 + data.length;
}

// The filtered rows handed to deflate, kept from card to card (one card is encoded at a time
// per thread; deflate reads them synchronously), and one row of packed RGB words.
let rows: Buffer | undefined;
let rowWords = new Uint32Array(0);
let rowBytes = new Uint8Array(0);

/**
 * Packs row `y` of RGBA pixels as RGB into `out` at `at`, four pixels (four words) into three
 * words at a time: a row of 1200 pixels is 900 words written, not 3600 bytes.
 */
function packRow(pixels: Uint32Array, width: number, y: number, out: Buffer, at: number): void {
  const words = rowWords;
  const whole = width & ~3;
  let o = 0;
  let i = y * width;
  for (const end = i + whole; i < end; i += 4, o += 3) {
    const a = pixels[i]!;
    const b = pixels[i + 1]!;
    const c = pixels[i + 2]!;
    const d = pixels[i + 3]!;
    words[o] = (a & 0xffffff) | (b << 24);
    words[o + 1] = ((b >>> 8) & 0xffff) | (c << 16);
    words[o + 2] = ((c >>> 16) & 0xff) | (d << 8);
  }
  out.set(rowBytes, at);
  for (let x = whole, p = at + whole * 3; x < width; x++, i++, p += 3) {
    const v = pixels[i]!;
    out[p] = v;
    out[p + 1] = v >>> 8;
    out[p + 2] = v >>> 16;
  }
}

/** Encodes RGBA pixels (alpha ignored: the card is opaque) as an RGB PNG. */
export function encodePng(rgba: Uint8Array, width: number, height: number, level = 2): Buffer {
  const stride = width * 3 + 1;
  if (rows === undefined || rows.length < stride * height) rows = Buffer.allocUnsafe(stride * height);
  const raw = rows.subarray(0, stride * height);
  if (LITTLE_ENDIAN && rgba.byteOffset % 4 === 0) {
    // Each pixel read as one little-endian word (red in the low byte), four pixels packed into
    // three words: copying the channels a byte at a time was a quarter of the card's CPU time.
    const pixels = new Uint32Array(rgba.buffer, rgba.byteOffset, width * height);
    if (rowBytes.length !== (width & ~3) * 3) {
      rowWords = new Uint32Array(((width & ~3) * 3) / 4);
      rowBytes = new Uint8Array(rowWords.buffer);
    }
    for (let y = 0; y < height; y++) {
      raw[y * stride] = 0; // filter type None
      packRow(pixels, width, y, raw, y * stride + 1);
    }
  } else {
    for (let y = 0; y < height; y++) {
      let o = y * stride;
      raw[o++] = 0;
      for (let x = 0, i = y * width * 4; x < width; x++, i += 4) {
        raw[o++] = rgba[i]!;
        raw[o++] = rgba[i + 1]!;
        raw[o++] = rgba[i + 2]!;
      }
    }
  }
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 8; // bit depth
  header[9] = 2; // colour type RGB
  const idat = deflateSync(raw, { level });
  // The file written once, in place: signature, IHDR, IDAT, IEND.
  const png = Buffer.allocUnsafe(SIGNATURE.length + 3 * 12 + header.length + idat.length);
  png.set(SIGNATURE, 0);
  let at = writeChunk(png, SIGNATURE.length, 'IHDR', header);
  at = writeChunk(png, at, 'IDAT', idat);
  writeChunk(png, at, 'IEND', new Uint8Array(0));
  return png;
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
