/**
 * The pure address rule (docs/architecture.md §6, §7 rule 4): is one IP address, as a resolver
 * answered it or as a URL spelled it after WHATWG parsing, a place a page may reach?
 *
 * Order of questions for one address:
 *  1. Opened on purpose by GUARD_ALLOW_CIDRS? Then not private (the inner IPv4 of a mapped or
 *     NAT64 address is asked the same question).
 *  2. IPv6 that wraps IPv4: mapped (::ffff:0:0/96) and NAT64 (64:ff9b::/96) are unwrapped and
 *     the inner address judged; compatible (::/96), 6to4 and Teredo are refused whatever they carry.
 *  3. Other IPv6 outside 2000::/3, or inside any special-purpose block: refused.
 *  4. IPv4 inside any special-purpose block or multicast: refused.
 * A private address is `private_address`; an otherwise reachable address of the service itself
 * is `denied_host` (private first: spec Part 7 and docs/architecture.md §7 rule 6), whatever
 * GUARD_ALLOW_CIDRS opens: its own addresses and ranges on every port, and this host (all of
 * loopback, the unspecified address) on the ports the service listens on, since a listener on
 * every address answers at 127.0.0.2 as well as at 127.0.0.1.
 */
import ipaddr from 'ipaddr.js';
import {
  GLOBAL_UNICAST_V6,
  MAPPED_V6,
  NAT64_V6,
  PARSED_V4,
  PARSED_V6,
  REFUSED_WRAPPERS_V6,
  type Cidr4,
  type Cidr6,
} from './ranges.ts';

export type Address = ipaddr.IPv4 | ipaddr.IPv6;

/** The verdict on one address. */
export type AddressVerdict = 'ok' | 'private_address' | 'denied_host';

/** What an operator configured: ranges opened on purpose, and the service's own addresses. */
export interface AddressRules {
  allow: readonly (Cidr4 | Cidr6)[];
  /** Canonical strings (see canonical()) of the service's own addresses, on every port. */
  self: ReadonlySet<string>;
  /** Ranges that are the service on every port (GUARD_SELF_ADDRESSES). */
  selfRanges?: readonly (Cidr4 | Cidr6)[];
  /** The ports the service listens on; at THIS_HOST addresses they are the service itself. */
  ownPorts?: () => Iterable<number>;
}

/**
 * Addresses that reach this host's own listeners whatever its interfaces are: the whole loopback
 * block (Linux answers every 127.x address locally) and the unspecified addresses.
 */
export const THIS_HOST: readonly (Cidr4 | Cidr6)[] = [
  ipaddr.IPv4.parseCIDR('127.0.0.0/8'),
  ipaddr.IPv4.parseCIDR('0.0.0.0/32'),
  ipaddr.IPv6.parseCIDR('::1/128'),
  ipaddr.IPv6.parseCIDR('::/128'),
];

export const NO_RULES: AddressRules = { allow: [], self: new Set() };

/**
 * Parses a canonical address: dotted-quad IPv4 or an IPv6 literal without brackets or zone.
 * Anything else (short or octal IPv4 forms, zone ids) is undefined: the WHATWG parser has
 * already rewritten every legitimate spelling, so a leftover odd form is not an address.
 */
export function parseAddress(text: string): Address | undefined {
  if (ipaddr.IPv4.isValidFourPartDecimal(text)) return ipaddr.IPv4.parse(text);
  if (text.includes('%') || !ipaddr.IPv6.isValid(text)) return undefined;
  return ipaddr.IPv6.parse(text);
}

/** One spelling per address, for comparing against the service's own addresses. */
export function canonical(a: Address): string {
  return a.toString();
}

/** Parses a CIDR (or a single address as a /32 or /128) from configuration, or throws. */
export function parseCidr(text: string): Cidr4 | Cidr6 {
  const withPrefix = text.includes('/') ? text : `${text}/${text.includes(':') ? 128 : 32}`;
  const [addr, bits] = withPrefix.split('/') as [string, string];
  const parsed = parseAddress(addr);
  if (parsed === undefined || !/^\d{1,3}$/.test(bits)) throw new Error(`not an address range: ${text}`);
  const max = parsed.kind() === 'ipv4' ? 32 : 128;
  const n = Number(bits);
  if (n > max) throw new Error(`not an address range: ${text}`);
  return [parsed, n] as Cidr4 | Cidr6;
}

function within(a: Address, cidrs: readonly (Cidr4 | Cidr6)[]): boolean {
  for (const c of cidrs) {
    if (c[0].kind() === a.kind() && a.match(c)) return true;
  }
  return false;
}

/** The IPv4 address a mapped or NAT64 IPv6 address carries, if it is one of those. */
export function innerIPv4(a: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  if (!a.match(MAPPED_V6) && !a.match(NAT64_V6)) return undefined;
  const p = a.parts;
  return new ipaddr.IPv4([p[6]! >> 8, p[6]! & 0xff, p[7]! >> 8, p[7]! & 0xff]);
}

function privateV4(a: ipaddr.IPv4, allow: AddressRules['allow']): boolean {
  if (within(a, allow)) return false;
  return within(a, PARSED_V4);
}

function privateV6(a: ipaddr.IPv6, allow: AddressRules['allow']): boolean {
  if (within(a, allow)) return false;
  const inner = innerIPv4(a);
  if (inner !== undefined) return privateV4(inner, allow);
  if (within(a, REFUSED_WRAPPERS_V6)) return true;
  if (!a.match(GLOBAL_UNICAST_V6)) return true;
  return within(a, PARSED_V6);
}

/** Whether `a` (one spelling, not unwrapped) is the service itself, `port` being the one asked for. */
function isSelf(a: Address, rules: AddressRules, port: number | undefined): boolean {
  if (rules.self.has(canonical(a))) return true;
  if (rules.selfRanges !== undefined && within(a, rules.selfRanges)) return true;
  if (port === undefined || rules.ownPorts === undefined || !within(a, THIS_HOST)) return false;
  for (const own of rules.ownPorts()) if (own === port) return true;
  return false;
}

/**
 * Judges one address against the refused ranges and the service's own addresses. `port` is the
 * port the target asks for, when there is one: this host is the service on the service's ports.
 */
export function judgeAddress(a: Address, rules: AddressRules, port?: number): AddressVerdict {
  if (a.kind() === 'ipv4') {
    const v4 = a as ipaddr.IPv4;
    if (privateV4(v4, rules.allow)) return 'private_address';
    return isSelf(v4, rules, port) ? 'denied_host' : 'ok';
  }
  const v6 = a as ipaddr.IPv6;
  if (privateV6(v6, rules.allow)) return 'private_address';
  const inner = innerIPv4(v6);
  if (isSelf(v6, rules, port) || (inner !== undefined && isSelf(inner, rules, port))) return 'denied_host';
  return 'ok';
}

/**
 * The address to dial for an address that passed: a mapped IPv6 address is dialled as the
 * IPv4 address it is (the same endpoint, without relying on a dual-stack socket); every
 * other address as itself.
 */
export function dialTarget(a: Address): { address: string; family: 4 | 6 } {
  if (a.kind() === 'ipv4') return { address: a.toString(), family: 4 };
  const v6 = a as ipaddr.IPv6;
  if (v6.match(MAPPED_V6)) return { address: v6.toIPv4Address().toString(), family: 4 };
  return { address: v6.toString(), family: 6 };
}
