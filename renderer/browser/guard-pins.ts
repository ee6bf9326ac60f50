/**
 * Which guard a render talks to when `GUARD_URL` names several (docs/architecture.md §2 "guard"). A
 * guard keeps a render's refusals in its own process, so every connection the render's relay
 * dials and the read of its tally must reach one and the same guard: were they spread over
 * replicas, the tally read would miss refusals counted elsewhere (a refused document read as a
 * failed target, 502 and metered instead of 422; `x-render-blocked` short). In a cluster the name
 * is the guard's headless Service (docs/helm.md "Install"), which resolves to every ready
 * guard pod. A render's first use of the guard (a dial, or the read of its tally) resolves the
 * name, answers kept for LOOKUP_TTL_MS, and takes the next address in turn; the render keeps it
 * until it is forgotten. A guard that goes away while a render holds it fails that render as a
 * guard that stops answering does (the guard is lost until the self-test passes again).
 */
import dns from 'node:dns/promises';
import type { GuardAddress } from './guard-endpoint.ts';

/** Every address a name resolves to now (a seam: tests give names of their own). */
export type LookupAll = (host: string) => Promise<string[]>;

/** The system resolver's answers (`/etc/hosts`, the cluster's DNS), all of them. */
export const lookupAll: LookupAll = async (host) => (await dns.lookup(host, { all: true, order: 'verbatim' })).map((a) => a.address);

/**
 * How long one lookup's answers are used. Short: a guard pod that joined the Service gets renders
 * within a second, and one that left (ready no more, draining) gets no new one after that.
 */
export const LOOKUP_TTL_MS = 1_000;

/** Where a render's connections and the read of its tally go, by the render's token. */
export interface GuardRoute {
  /** The guard of the render `token` names: chosen at its first use, then kept. */
  of(token: string): Promise<GuardAddress>;
  /** The render is over (its lane named another, or its relays closed): its choice is dropped. */
  forget(token: string): void;
}

/**
 * The route to a guard at `address`: one place (a unix socket, an address) is every render's; a
 * host name is resolved and each render pinned to one of its addresses.
 */
export function guardRoute(address: GuardAddress, options: { lookup?: LookupAll; now?: () => number } = {}): GuardRoute {
  if ('path' in address) return oneGuard(address);
  return new GuardPins(address, options.lookup ?? lookupAll, options.now ?? (() => performance.now()));
}

/** Every render to `address`, as it is (a unix socket; netns isolation's bridge, guard-bridge.ts). */
export function oneGuard(address: GuardAddress): GuardRoute {
  const fixed = Promise.resolve(address);
  return { of: () => fixed, forget: () => {} };
}

/** Renders pinned to one address each of a name that resolves to several. */
export class GuardPins implements GuardRoute {
  private readonly pins = new Map<string, Promise<GuardAddress>>();
  private answers: { at: number; addresses: Promise<string[]> } | undefined;
  private turn = 0;

  constructor(
    private readonly guard: { host: string; port: number },
    private readonly lookup: LookupAll,
    private readonly now: () => number,
  ) {}

  of(token: string): Promise<GuardAddress> {
    const pinned = this.pins.get(token);
    if (pinned !== undefined) return pinned;
    const chosen = this.pick();
    this.pins.set(token, chosen);
    // A lookup that failed chose nothing and nothing reached a guard under it: the next use chooses afresh.
    chosen.catch(() => {
      if (this.pins.get(token) === chosen) this.pins.delete(token);
    });
    return chosen;
  }

  forget(token: string): void {
    this.pins.delete(token);
  }

  private async pick(): Promise<GuardAddress> {
    const addresses = await this.addresses();
    const host = addresses[this.turn % addresses.length]!;
    this.turn += 1;
    return { host, port: this.guard.port };
  }

  /** The name's addresses, sorted (so "in turn" does not depend on the resolver's order), looked up at most once per LOOKUP_TTL_MS. */
  private addresses(): Promise<string[]> {
    const now = this.now();
    if (this.answers === undefined || now - this.answers.at >= LOOKUP_TTL_MS) {
      const addresses = this.lookup(this.guard.host).then((found) => {
        if (found.length === 0) throw new Error('the guard name resolved to no address');
        return [...new Set(found)].sort();
      });
      this.answers = { at: now, addresses };
      addresses.catch(() => {
        if (this.answers?.addresses === addresses) this.answers = undefined;
      });
    }
    return this.answers.addresses;
  }
}
