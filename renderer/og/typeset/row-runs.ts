/** Runs of flagged rows: the drawn rows a card restores (surface.ts), the ground rows the PNG encoder reuses (png.ts). */

/**
 * The first run of at least `minLength` rows flagged 1 in `flags`, from row `from` on, as
 * [first, end); [flags.length, flags.length] when there is none.
 */
export function nextRun(flags: Uint8Array, from: number, minLength = 1): [number, number] {
  const height = flags.length;
  for (let y = from; y < height; ) {
    if (flags[y] === 0) {
      y++;
      continue;
    }
    let end = y;
    while (end < height && flags[end] === 1) end++;
    if (end - y >= minLength) return [y, end];
    y = end;
  }
  return [height, height];
}
