/**
 * PNG encoding and decoding with node:zlib. The card is encoded as 8-bit RGB rows with no
 * filter at deflate level 2: the card's long runs of one colour and its rows that repeat the
 * ground deflate well as they are, so this is both faster and smaller than the Sub filter at
 * level 4 (measured on the gallery cards: about half the CPU time, 6% fewer bytes), and several
 * times quicker than pureimage's pngjs path (speed: docs/performance.md).
 * The decoder reads the emoji images and the test goldens: 8-bit, non-interlaced.
 */
import { deflateSync, inflateSync } from 'node:zlib';

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

function crc32(bytes: Uint8Array, start: number, end: number): number {
  let c = -1;
  for (let i = start; i < end; i++) c = CRC_TABLE[(c ^ bytes[i]!) & 0xff]! ^ (c >>> 8);
  return (c ^ -1) >>> 0;
}

function chunk(type: string, data: Uint8Array): Buffer {
  const out = Buffer.alloc(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  out.write(type, 4, 'latin1');
  out.set(data, 8);
  out.writeUInt32BE(crc32(out, 4, 8 + data.length), 8 + data.length);
  return out;
}

/** Encodes RGBA pixels (alpha ignored: the card is opaque) as an RGB PNG. */
export function encodePng(rgba: Uint8Array, width: number, height: number, level = 2): Buffer {
  const stride = width * 3 + 1;
  const raw = Buffer.allocUnsafe(stride * height);
  for (let y = 0; y < height; y++) {
    let o = y * stride;
    let i = y * width * 4;
    raw[o++] = 0; // filter type None
    for (let x = 0; x < width; x++, i += 4) {
      raw[o++] = rgba[i]!;
      raw[o++] = rgba[i + 1]!;
      raw[o++] = rgba[i + 2]!;
    }
  }
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 8; // bit depth
  header[9] = 2; // colour type RGB
  const idat = deflateSync(raw, { level });
  return Buffer.concat([SIGNATURE, chunk('IHDR', header), chunk('IDAT', idat), chunk('IEND', new Uint8Array(0))]);
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
