/**
 * Line breaking and fitting (text that fits its slot): text wraps at its break opportunities,
 * a word longer than a line breaks between graphemes, and text that still needs more lines
 * than allowed is cut with an ellipsis that fits inside the width.
 */
import type { Role } from './faces.ts';
import { shape, type Cluster } from './shape.ts';

export interface Line {
  readonly clusters: readonly Cluster[];
  /** Advance in em. */
  readonly em: number;
}

export interface Wrapped {
  lines: Line[];
  truncated: boolean;
}

function sum(clusters: readonly Cluster[]): number {
  let em = 0;
  for (const c of clusters) em += c.em;
  return em;
}

function trimEnd(clusters: Cluster[]): Cluster[] {
  let end = clusters.length;
  while (end > 0 && clusters[end - 1]!.space) end--;
  return clusters.slice(0, end);
}

const ellipses = new Map<Role, Cluster>();

function ellipsis(role: Role): Cluster {
  let e = ellipses.get(role);
  if (e === undefined) {
    e = { ...shape('…', role)[0]!, breakBefore: false };
    ellipses.set(role, e);
  }
  return e;
}

/** Wraps clusters into at most `maxLines` lines of at most `maxEm` em. */
export function wrap(clusters: readonly Cluster[], maxEm: number, maxLines: number, role: Role): Wrapped {
  const lines: Cluster[][] = [];
  let current: Cluster[] = [];
  let currentEm = 0;
  const push = () => {
    const line = trimEnd(current);
    if (line.length > 0) lines.push(line);
    current = [];
    currentEm = 0;
  };
  let i = 0;
  while (i < clusters.length) {
    let j = i + 1;
    while (j < clusters.length && !clusters[j]!.breakBefore) j++;
    const word = clusters.slice(i, j);
    const full = sum(word);
    const visible = sum(trimEnd(word));
    i = j;
    if (current.length > 0 && currentEm + visible <= maxEm) {
      current.push(...word);
      currentEm += full;
      continue;
    }
    if (current.length > 0) push();
    if (lines.length > maxLines) break;
    if (visible <= maxEm) {
      current = word.filter((c, k) => k > 0 || !c.space);
      currentEm = sum(current);
      continue;
    }
    // A word wider than the line breaks between graphemes.
    for (const c of word) {
      if (current.length > 0 && !c.space && currentEm + c.em > maxEm) push();
      if (current.length === 0 && c.space) continue;
      current.push(c);
      currentEm += c.em;
    }
  }
  if (current.length > 0) push();
  if (lines.length <= maxLines) {
    return { lines: lines.map((l) => ({ clusters: l, em: sum(l) })), truncated: false };
  }
  const kept = lines.slice(0, maxLines);
  kept[maxLines - 1] = withEllipsis(kept[maxLines - 1]!, maxEm, role);
  return { lines: kept.map((l) => ({ clusters: l, em: sum(l) })), truncated: true };
}

/** Cuts a line so it ends with an ellipsis and fits in `maxEm`. */
export function withEllipsis(line: readonly Cluster[], maxEm: number, role: Role): Cluster[] {
  const dots = ellipsis(role);
  const out = [...line];
  while (out.length > 0 && (sum(out) + dots.em > maxEm || out[out.length - 1]!.space)) out.pop();
  out.push(dots);
  return out;
}

/** Sizes from `max` down to `min` in steps of `step` pixels. */
export function sizes(max: number, min: number, step: number): number[] {
  const out: number[] = [];
  for (let s = max; s > min; s -= step) out.push(s);
  out.push(min);
  return out;
}
