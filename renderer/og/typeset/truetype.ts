/**
 * A lazy TrueType face (memory): opentype.js's whole-font parse, as pureimage
 * runs it, makes an object for every glyph of a font up front (its hmtx step visits each one),
 * which for Droid Sans Fallback and Nanum Gothic alone is most of a drawing thread's 200 MB.
 * Here a face reads its file in two steps, each on first need: `covers()` reads only the table
 * directory, head, hhea, maxp and the cmap; `glyph()` then reads loca and hmtx (not kern,
 * GPOS or names, which the drawing never uses), and each glyph's own bytes of glyf when it is
 * first asked for, building and caching it. The file is opened only for each read: a thread that
 * ends (pool.ts) leaves no descriptor behind. Outlines are still built by opentype.js's own glyf reader (the copy pureimage
 * depends on), so every path is the one the card was drawn with before.
 */
import { closeSync, openSync, readSync } from 'node:fs';
import { createRequire } from 'node:module';

/** The parts of an opentype.js glyph outline the drawing uses. */
export interface OutlineCommand {
  type: 'M' | 'L' | 'Q' | 'C' | 'Z';
  x: number;
  y: number;
  x1: number;
  y1: number;
  x2: number;
  y2: number;
}

/** The parts of an opentype.js glyph the drawing uses. */
export interface OtGlyph {
  index: number;
  advanceWidth: number;
  /** Bounding box in font units, from the glyph's header (set once the path is first read). */
  yMin?: number;
  yMax?: number;
  path: { commands: OutlineCommand[] };
}

interface GlyphSetLike {
  get(index: number): OtGlyph;
}
type GlyfParse = (data: DataView, start: number, loca: number[], font: { unitsPerEm: number; glyphs: GlyphSetLike }) => GlyphSetLike;

// opentype.js is pureimage's dependency; its glyf reader is taken from that same copy.
const fromPureimage = createRequire(createRequire(import.meta.url).resolve('pureimage'));
const parseGlyf = (fromPureimage('opentype.js/src/tables/glyf.js') as { parse: GlyfParse }).parse;

// Built glyphs kept per face; past this many the face starts over.
// Glyphs still referenced by shaped text stay valid: they are plain objects.
const MAX_GLYPHS_PER_FACE = 2048;

interface Directory {
  unitsPerEm: number;
  numGlyphs: number;
  numberOfHMetrics: number;
  longLoca: boolean;
  tables: Map<string, { offset: number; length: number }>;
  /** The Windows BMP (format 4) cmap subtable, or undefined when the face has none. */
  cmap: DataView | undefined;
}

interface Outlines {
  loca: DataView;
  hmtx: DataView;
  /** Where glyf starts in the file. */
  glyf: number;
}

function readAt(fd: number, offset: number, length: number): DataView {
  const buf = Buffer.alloc(length);
  const n = readSync(fd, buf, 0, length, offset);
  if (n !== length) throw new Error('truncated font file');
  return new DataView(buf.buffer, buf.byteOffset, length);
}

/** How far each step of a face has been read (for tests and memory figures). */
export type FaceStage = 'none' | 'cmap' | 'outlines';

/** One TrueType face read on demand. */
export class LazyTrueType {
  private dir: Directory | undefined;
  private outlines: Outlines | undefined;
  private readonly glyphs = new Map<number, OtGlyph>();
  private readonly shim: { unitsPerEm: number; glyphs: GlyphSetLike };

  constructor(readonly file: string) {
    this.shim = { unitsPerEm: 0, glyphs: { get: (i) => this.glyphAt(i) } };
  }

  get stage(): FaceStage {
    return this.outlines !== undefined ? 'outlines' : this.dir !== undefined ? 'cmap' : 'none';
  }

  get unitsPerEm(): number {
    return this.directory().unitsPerEm;
  }

  /** The glyph index of a code point, 0 when the face has none (BMP only, as pureimage reads). */
  glyphIndex(cp: number): number {
    const cmap = this.directory().cmap;
    if (cmap === undefined || cp > 0xffff || cp < 0) return 0;
    const segCount = cmap.getUint16(6) >> 1;
    // The last segment (0xFFFF) maps nothing, as opentype.js reads it.
    let lo = 0;
    let hi = segCount - 2;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const end = cmap.getUint16(14 + mid * 2);
      if (end < cp) {
        lo = mid + 1;
        continue;
      }
      const start = cmap.getUint16(16 + segCount * 2 + mid * 2);
      if (start > cp) {
        hi = mid - 1;
        continue;
      }
      const delta = cmap.getInt16(16 + segCount * 4 + mid * 2);
      const rangeAt = 16 + segCount * 6 + mid * 2;
      const rangeOffset = cmap.getUint16(rangeAt);
      if (rangeOffset === 0) return (cp + delta) & 0xffff;
      const at = rangeAt + rangeOffset + (cp - start) * 2;
      if (at + 2 > cmap.byteLength) return 0;
      const g = cmap.getUint16(at);
      return g === 0 ? 0 : (g + delta) & 0xffff;
    }
    return 0;
  }

  /** The glyph of an index (0, .notdef, for an index the face lacks), built on first use. */
  glyphAt(index: number): OtGlyph {
    const dir = this.directory();
    const i = index >= 0 && index < dir.numGlyphs ? index : 0;
    const cached = this.glyphs.get(i);
    if (cached !== undefined) return cached;
    const o = this.readOutlines();
    const at = (k: number) => (dir.longLoca ? o.loca.getUint32(k * 4) : o.loca.getUint16(k * 2) * 2);
    const from = at(i);
    const length = Math.max(0, at(i + 1) - from);
    let bytes: DataView = new DataView(new ArrayBuffer(0));
    if (length > 0) {
      const fd = openSync(this.file, 'r');
      try {
        bytes = readAt(fd, o.glyf + from, length);
      } finally {
        closeSync(fd);
      }
    }
    const glyph = parseGlyf(bytes, 0, [0, length], this.shim).get(0);
    glyph.index = i;
    const metric = Math.min(i, dir.numberOfHMetrics - 1);
    glyph.advanceWidth = o.hmtx.getUint16(metric * 4);
    if (this.glyphs.size >= MAX_GLYPHS_PER_FACE) this.glyphs.clear();
    this.glyphs.set(i, glyph);
    return glyph;
  }

  private directory(): Directory {
    if (this.dir !== undefined) return this.dir;
    const fd = openSync(this.file, 'r');
    try {
      const numTables = readAt(fd, 0, 12).getUint16(4);
      const records = readAt(fd, 12, numTables * 16);
      const tables = new Map<string, { offset: number; length: number }>();
      for (let k = 0; k < numTables; k++) {
        const p = k * 16;
        const tag = String.fromCharCode(records.getUint8(p), records.getUint8(p + 1), records.getUint8(p + 2), records.getUint8(p + 3));
        tables.set(tag, { offset: records.getUint32(p + 8), length: records.getUint32(p + 12) });
      }
      const table = (tag: string) => {
        const t = tables.get(tag);
        if (t === undefined) throw new Error(`font has no ${tag} table`);
        return readAt(fd, t.offset, t.length);
      };
      const head = table('head');
      const hhea = table('hhea');
      const maxp = table('maxp');
      if (!tables.has('glyf') || !tables.has('loca')) throw new Error('font has no TrueType outlines');
      this.dir = {
        unitsPerEm: head.getUint16(18),
        longLoca: head.getInt16(50) !== 0,
        numberOfHMetrics: hhea.getUint16(34),
        numGlyphs: maxp.getUint16(4),
        tables,
        cmap: windowsBmpCmap(table('cmap')),
      };
      this.shim.unitsPerEm = this.dir.unitsPerEm;
      return this.dir;
    } finally {
      closeSync(fd);
    }
  }

  private readOutlines(): Outlines {
    if (this.outlines !== undefined) return this.outlines;
    const dir = this.directory();
    const fd = openSync(this.file, 'r');
    try {
      const table = (tag: string) => {
        const t = dir.tables.get(tag);
        if (t === undefined) throw new Error(`font has no ${tag} table`);
        return readAt(fd, t.offset, t.length);
      };
      this.outlines = { loca: table('loca'), hmtx: table('hmtx'), glyf: dir.tables.get('glyf')!.offset };
      return this.outlines;
    } finally {
      closeSync(fd);
    }
  }
}

// The first Windows (platform 3, encoding 1 or 0) subtable, as opentype.js 0.4 chooses it; it
// must be format 4. The view is copied so the rest of the cmap table is not kept.
function windowsBmpCmap(cmap: DataView): DataView | undefined {
  const count = cmap.getUint16(2);
  for (let k = 0; k < count; k++) {
    const platform = cmap.getUint16(4 + k * 8);
    const encoding = cmap.getUint16(6 + k * 8);
    if (platform !== 3 || (encoding !== 1 && encoding !== 0)) continue;
    const offset = cmap.getUint32(8 + k * 8);
    if (cmap.getUint16(offset) !== 4) throw new Error('Only format 4 cmap tables are supported.');
    // The subtable's 16-bit length field can wrap for a large font: keep all that follows it.
    const own = new Uint8Array(cmap.byteLength - offset);
    own.set(new Uint8Array(cmap.buffer, cmap.byteOffset + offset, cmap.byteLength - offset));
    return new DataView(own.buffer);
  }
  return undefined;
}
