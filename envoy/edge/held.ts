/**
 * The bytes of request bodies the edge holds before their key is checked (docs/security.md "The meter's walls"):
 * the 413 comes before any key lookup, so until policy has answered, a body is a stranger's
 * memory. One budget for the whole edge; a request that would pass it is 503 `busy` at once.
 */

export interface HeldBodies {
  /** Takes `n` bytes of the budget, or answers false and takes nothing. */
  take(n: number): boolean;
  /** Gives back bytes taken earlier. */
  give(n: number): void;
  /** Bytes held now. */
  held(): number;
}

export function heldBodies(maxBytes: number): HeldBodies {
  let held = 0;
  return {
    take(n) {
      if (held + n > maxBytes) return false;
      held += n;
      return true;
    },
    give(n) {
      held -= n;
    },
    held: () => held,
  };
}
