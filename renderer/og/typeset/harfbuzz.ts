/**
 * One font file as HarfBuzz (WebAssembly, the npm package `harfbuzzjs`) sees it: its cmap for
 * coverage, its OpenType tables for shaping (substitutions and positions: conjuncts, reph,
 * reordered vowel signs, marks, Arabic joining, kerning, ligatures) and its outlines, drawn
 * through HarfBuzz's draw API, so TrueType and CFF faces read alike. The file is read into
 * HarfBuzz on first need and kept for the thread's life; HarfBuzz caches each shaping plan on
 * the face, one per script, direction and feature set, so a plan is compiled once per thread.
 */
import { readFileSync } from 'node:fs';
import * as hb from 'harfbuzzjs';

/** One shaped glyph: its id in the face, the UTF-16 index its cluster starts at, in font units. */
export interface ShapedGlyph {
  readonly id: number;
  readonly cluster: number;
  readonly advance: number;
  readonly dx: number;
  readonly dy: number;
}

/** Where an outline goes, in font units with y up. */
export interface OutlineSink {
  moveTo(x: number, y: number): void;
  lineTo(x: number, y: number): void;
  quadTo(cx: number, cy: number, x: number, y: number): void;
  cubicTo(c1x: number, c1y: number, c2x: number, c2y: number, x: number, y: number): void;
  close(): void;
}

export type Direction = 'ltr' | 'rtl';

// One set of draw callbacks for every face; each call passes its sink as the draw data.
let drawFuncs: hb.DrawFuncs | undefined;

function outlineFuncs(): hb.DrawFuncs {
  if (drawFuncs !== undefined) return drawFuncs;
  const d = new hb.DrawFuncs();
  d.setMoveToFunc((x, y, s) => (s as OutlineSink).moveTo(x, y));
  d.setLineToFunc((x, y, s) => (s as OutlineSink).lineTo(x, y));
  d.setQuadraticToFunc((cx, cy, x, y, s) => (s as OutlineSink).quadTo(cx, cy, x, y));
  d.setCubicToFunc((ax, ay, bx, by, x, y, s) => (s as OutlineSink).cubicTo(ax, ay, bx, by, x, y));
  d.setClosePathFunc((s) => (s as OutlineSink).close());
  drawFuncs = d;
  return d;
}

// One buffer reused by every shaping call of the thread (shaping is synchronous).
let buffer: hb.Buffer | undefined;

/** A font file read into HarfBuzz on first use. */
export class HbFont {
  private font: hb.Font | undefined;
  private face: hb.Face | undefined;
  private readonly coverage = new Map<number, boolean>();
  private readonly boxes = new Map<number, { yMax: number; yMin: number }>();

  constructor(readonly file: string) {}

  /** Whether the file has been read. */
  get loaded(): boolean {
    return this.font !== undefined;
  }

  private open(): hb.Font {
    if (this.font === undefined) {
      this.face = new hb.Face(new hb.Blob(readFileSync(this.file)));
      this.font = new hb.Font(this.face);
    }
    return this.font;
  }

  get unitsPerEm(): number {
    this.open();
    return this.face!.upem;
  }

  /** Whether the cmap maps the code point to a glyph. */
  covers(cp: number): boolean {
    let hit = this.coverage.get(cp);
    if (hit === undefined) {
      hit = this.open().nominalGlyph(cp) !== undefined;
      this.coverage.set(cp, hit);
    }
    return hit;
  }

  /** The face's glyph for a code point, 0 (.notdef) when it has none. */
  glyphOf(cp: number): number {
    return this.open().nominalGlyph(cp) ?? 0;
  }

  /**
   * Shapes `text[start, end)` with the rest of `text` as context (so joining looks across the
   * run's edges). Glyphs come in visual order, left to right, as HarfBuzz gives them.
   */
  shape(text: string, start: number, end: number, direction: Direction): ShapedGlyph[] {
    const font = this.open();
    buffer ??= new hb.Buffer();
    const b = buffer;
    b.reset();
    b.addText(text, start, end - start);
    b.setDirection(direction === 'rtl' ? hb.Direction.RTL : hb.Direction.LTR);
    b.guessSegmentProperties();
    hb.shape(font, b);
    return b.getGlyphInfosAndPositions().map((g) => ({
      id: g.codepoint,
      cluster: g.cluster,
      advance: g.xAdvance ?? 0,
      dx: g.xOffset ?? 0,
      dy: g.yOffset ?? 0,
    }));
  }

  /** A glyph's advance in font units. */
  advance(id: number): number {
    return this.open().glyphHAdvance(id);
  }

  /** Draws a glyph's outline into `sink` in font units, y up. */
  draw(id: number, sink: OutlineSink): void {
    this.open().drawGlyph(id, outlineFuncs(), sink);
  }

  /** Highest and lowest ink of a glyph in font units (y up). */
  box(id: number): { yMax: number; yMin: number } {
    let b = this.boxes.get(id);
    if (b === undefined) {
      const e = this.open().glyphExtents(id);
      b = e === undefined ? { yMax: 0, yMin: 0 } : { yMax: e.yBearing, yMin: e.yBearing + e.height };
      this.boxes.set(id, b);
    }
    return b;
  }
}
