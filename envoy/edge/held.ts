/**
 * The bytes of request bodies the edge holds before their key is checked (docs/security.md "The meter's walls"):
 * the 413 comes before any key lookup, so until policy has answered, a body is a stranger's
 * memory. Bytes are charged as they arrive, never as announced: a `content-length` nobody sends
 * costs nothing. One budget for the whole edge, and a share of it per client address, so no one
 * address holds the room a keyed request needs; a chunk that would pass either is 503 `busy` at
 * once.
 */
import type { BodyBudget } from '../../lib/body.ts';
import { clientOf } from '../../lib/peers.ts';

export { clientOf };

export interface HeldBodies {
  /** The budget one request from `address` reads its body against. */
  forClient(address: string | undefined): BodyBudget;
  /** Bytes held now, by everyone. */
  held(): number;
}

/** `maxBytes` in all, at most `perClientBytes` of it from one address (clientOf). */
export function heldBodies(maxBytes: number, perClientBytes: number): HeldBodies {
  let held = 0;
  const byClient = new Map<string, number>();
  return {
    forClient(address) {
      const client = clientOf(address);
      return {
        take(n) {
          const mine = byClient.get(client) ?? 0;
          if (held + n > maxBytes || mine + n > perClientBytes) return false;
          held += n;
          byClient.set(client, mine + n);
          return true;
        },
        give(n) {
          if (n === 0) return;
          held -= n;
          const left = (byClient.get(client) ?? 0) - n;
          if (left > 0) byClient.set(client, left);
          else byClient.delete(client);
        },
      };
    },
    held: () => held,
  };
}

/** One address's share of the edge's budget, when not set: a quarter of it, and at least one whole body. */
export function perClientShare(maxBytes: number, maxBodyBytes: number): number {
  return Math.max(maxBodyBytes, Math.floor(maxBytes / 4));
}
