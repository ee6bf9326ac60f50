/**
 * The service's own addresses and names (`denied_host`, spec Part 1 rule 6): every address of
 * this host's interfaces, and the addresses, ranges and names of GUARD_SELF_ADDRESSES. Names
 * there are resolved once at start; the name itself is refused too, whatever it later resolves
 * to. (This host's loopback on the service's ports is the judge's: address.ts THIS_HOST.)
 */
import os from 'node:os';
import { canonical, parseAddress, parseCidr } from './address.ts';
import type { Cidr4, Cidr6 } from './ranges.ts';
import { withoutTrailingDot } from './names.ts';
import type { Resolve } from './resolver.ts';

/** The service itself, as the judge compares against it. */
export interface SelfSet {
  addresses: Set<string>;
  /** Ranges given in GUARD_SELF_ADDRESSES (a cluster's pod and Service ranges). */
  ranges: (Cidr4 | Cidr6)[];
  names: Set<string>;
}

/** True for a GUARD_SELF_ADDRESSES entry that names a range (`a.b.c.d/n`, `v6::/n`). */
export function isRangeEntry(entry: string): boolean {
  return entry.includes('/');
}

/** Every address of this host's network interfaces. */
export function interfaceAddresses(): string[] {
  return Object.values(os.networkInterfaces()).flatMap((list) => (list ?? []).map((i) => i.address));
}

/** A self name as it is compared: lower case, no trailing dot. */
export function selfName(name: string): string {
  return withoutTrailingDot(name.toLowerCase());
}

/**
 * Builds the self set. A configured name that does not resolve at start stays refused by
 * name; `onUnresolved` is told (the operator's own setting, never a request's host).
 */
export async function collectSelf(options: {
  configured: readonly string[];
  interfaces: readonly string[];
  resolve: Resolve;
  onUnresolved?: (name: string, code: string) => void;
}): Promise<SelfSet> {
  const self: SelfSet = { addresses: new Set(), ranges: [], names: new Set() };
  const addAddress = (text: string): boolean => {
    const a = parseAddress(text.replace(/%.*$/, ''));
    if (a === undefined) return false;
    self.addresses.add(canonical(a));
    return true;
  };
  for (const text of options.interfaces) addAddress(text);
  await Promise.all(
    options.configured.map(async (entry) => {
      if (isRangeEntry(entry)) {
        self.ranges.push(parseCidr(entry));
        return;
      }
      const bare = entry.startsWith('[') && entry.endsWith(']') ? entry.slice(1, -1) : entry;
      if (addAddress(bare)) return;
      self.names.add(selfName(bare));
      try {
        for (const answer of await options.resolve(bare)) addAddress(answer);
      } catch (err) {
        options.onUnresolved?.(bare, (err as { code?: string }).code ?? 'EUNKNOWN');
      }
    }),
  );
  return self;
}
