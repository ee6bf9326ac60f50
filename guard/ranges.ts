/**
 * The refused ranges of docs/architecture.md §7 rule 4 and spec Part 1 rule 6: every block of the IANA
 * IPv4 and IPv6 Special-Purpose Address Registries (including those the registry marks as
 * globally reachable: a page has no business with anycast relays or AS112 sinks), plus the
 * multicast blocks. IPv6 outside 2000::/3 is refused by a rule of its own (address.ts), so
 * the IPv6 blocks below that lie outside it are listed for completeness, not necessity.
 */
import ipaddr from 'ipaddr.js';

/** One registry block: its CIDR and the registry's name for it. */
export interface Block {
  cidr: string;
  name: string;
}

/** IANA IPv4 Special-Purpose Address Registry, and multicast (RFC 5771). */
export const IPV4_BLOCKS: readonly Block[] = [
  { cidr: '0.0.0.0/8', name: 'this network' },
  { cidr: '10.0.0.0/8', name: 'private-use' },
  { cidr: '100.64.0.0/10', name: 'shared address space (CGNAT)' },
  { cidr: '127.0.0.0/8', name: 'loopback' },
  { cidr: '169.254.0.0/16', name: 'link local (cloud metadata)' },
  { cidr: '172.16.0.0/12', name: 'private-use' },
  { cidr: '192.0.0.0/24', name: 'IETF protocol assignments' },
  { cidr: '192.0.0.0/29', name: 'IPv4 service continuity prefix' },
  { cidr: '192.0.0.8/32', name: 'IPv4 dummy address' },
  { cidr: '192.0.0.9/32', name: 'port control protocol anycast' },
  { cidr: '192.0.0.10/32', name: 'traversal using relays around NAT anycast' },
  { cidr: '192.0.0.170/32', name: 'NAT64/DNS64 discovery' },
  { cidr: '192.0.0.171/32', name: 'NAT64/DNS64 discovery' },
  { cidr: '192.0.2.0/24', name: 'documentation (TEST-NET-1)' },
  { cidr: '192.31.196.0/24', name: 'AS112-v4' },
  { cidr: '192.52.193.0/24', name: 'AMT' },
  { cidr: '192.88.99.0/24', name: 'deprecated 6to4 relay anycast' },
  { cidr: '192.168.0.0/16', name: 'private-use' },
  { cidr: '192.175.48.0/24', name: 'direct delegation AS112 service' },
  { cidr: '198.18.0.0/15', name: 'benchmarking' },
  { cidr: '198.51.100.0/24', name: 'documentation (TEST-NET-2)' },
  { cidr: '203.0.113.0/24', name: 'documentation (TEST-NET-3)' },
  { cidr: '224.0.0.0/4', name: 'multicast' },
  { cidr: '240.0.0.0/4', name: 'reserved' },
  { cidr: '255.255.255.255/32', name: 'limited broadcast' },
];

/**
 * IANA IPv6 Special-Purpose Address Registry, and multicast. The forms that wrap an IPv4
 * address (::ffff:0:0/96, 64:ff9b::/96, ::/96, 2002::/16, 2001::/32) are decided in
 * address.ts before this table is consulted.
 */
export const IPV6_BLOCKS: readonly Block[] = [
  { cidr: '::/128', name: 'unspecified' },
  { cidr: '::1/128', name: 'loopback' },
  { cidr: '::ffff:0:0/96', name: 'IPv4-mapped' },
  { cidr: '64:ff9b::/96', name: 'IPv4-IPv6 translation' },
  { cidr: '64:ff9b:1::/48', name: 'local-use IPv4/IPv6 translation' },
  { cidr: '100::/64', name: 'discard-only' },
  { cidr: '100:0:0:1::/64', name: 'dummy IPv6 prefix' },
  { cidr: '2001::/23', name: 'IETF protocol assignments' },
  { cidr: '2001::/32', name: 'Teredo' },
  { cidr: '2001:1::1/128', name: 'port control protocol anycast' },
  { cidr: '2001:1::2/128', name: 'traversal using relays around NAT anycast' },
  { cidr: '2001:1::3/128', name: 'DNS-SD service registration protocol anycast' },
  { cidr: '2001:2::/48', name: 'benchmarking' },
  { cidr: '2001:3::/32', name: 'AMT' },
  { cidr: '2001:4:112::/48', name: 'AS112-v6' },
  { cidr: '2001:10::/28', name: 'deprecated ORCHID' },
  { cidr: '2001:20::/28', name: 'ORCHIDv2' },
  { cidr: '2001:30::/28', name: 'drone remote ID protocol entity tags' },
  { cidr: '2001:db8::/32', name: 'documentation' },
  { cidr: '2002::/16', name: '6to4' },
  { cidr: '2620:4f:8000::/48', name: 'direct delegation AS112 service' },
  { cidr: '3fff::/20', name: 'documentation' },
  { cidr: '5f00::/16', name: 'segment routing (SRv6) SIDs' },
  { cidr: 'fc00::/7', name: 'unique-local' },
  { cidr: 'fe80::/10', name: 'link-local unicast' },
  { cidr: 'ff00::/8', name: 'multicast' },
];

export type Cidr4 = [ipaddr.IPv4, number];
export type Cidr6 = [ipaddr.IPv6, number];

export const PARSED_V4: readonly Cidr4[] = IPV4_BLOCKS.map((b) => ipaddr.IPv4.parseCIDR(b.cidr));
export const PARSED_V6: readonly Cidr6[] = IPV6_BLOCKS.map((b) => ipaddr.IPv6.parseCIDR(b.cidr));

/** The global unicast space; IPv6 outside it is refused (docs/architecture.md §7 rule 4). */
export const GLOBAL_UNICAST_V6: Cidr6 = ipaddr.IPv6.parseCIDR('2000::/3');
/** Wrapping forms whose inner IPv4 is judged (RFC 4291 mapped, RFC 6052 well-known NAT64 prefix). */
export const MAPPED_V6: Cidr6 = ipaddr.IPv6.parseCIDR('::ffff:0:0/96');
export const NAT64_V6: Cidr6 = ipaddr.IPv6.parseCIDR('64:ff9b::/96');
/** Wrapping forms refused whatever they carry: IPv4-compatible (deprecated), 6to4, Teredo. */
export const REFUSED_WRAPPERS_V6: readonly Cidr6[] = [
  ipaddr.IPv6.parseCIDR('::/96'),
  ipaddr.IPv6.parseCIDR('2002::/16'),
  ipaddr.IPv6.parseCIDR('2001::/32'),
];
