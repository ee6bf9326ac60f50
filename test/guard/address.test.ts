/**
 * The pure address rule, one row per IANA special-purpose block (first address, last address,
 * and one address outside with what it must be), then the wrapping forms, allowed ranges and
 * the service's own addresses. Expected verdicts are written out here, not derived from the
 * table the code uses, so a wrong block in guard/ranges.ts fails a row.
 */
import t from 'tap';
import { judgeAddress, parseAddress, parseCidr, dialTarget, NO_RULES, type AddressRules } from '../../guard/address.ts';

type Row = [block: string, inside: string[], outside: string, outsideVerdict: 'ok' | 'private_address'];

const P = 'private_address';

const IPV4: Row[] = [
  ['0.0.0.0/8 this network', ['0.0.0.0', '0.255.255.255', '0.1.2.3'], '1.0.0.0', 'ok'],
  ['10.0.0.0/8 private', ['10.0.0.0', '10.255.255.255'], '11.0.0.0', 'ok'],
  ['10.0.0.0/8 private, below', ['10.0.0.0'], '9.255.255.255', 'ok'],
  ['100.64.0.0/10 CGNAT', ['100.64.0.0', '100.127.255.255'], '100.128.0.0', 'ok'],
  ['100.64.0.0/10 CGNAT, below', ['100.64.0.0'], '100.63.255.255', 'ok'],
  ['127.0.0.0/8 loopback', ['127.0.0.0', '127.0.0.1', '127.255.255.255'], '128.0.0.0', 'ok'],
  ['169.254.0.0/16 link local', ['169.254.0.0', '169.254.169.254', '169.254.255.255'], '169.255.0.0', 'ok'],
  ['172.16.0.0/12 private', ['172.16.0.0', '172.31.255.255'], '172.32.0.0', 'ok'],
  ['172.16.0.0/12 private, below', ['172.16.0.0'], '172.15.255.255', 'ok'],
  ['192.0.0.0/24 IETF protocol assignments', ['192.0.0.0', '192.0.0.255'], '192.0.1.0', 'ok'],
  ['192.0.0.0/29 service continuity', ['192.0.0.0', '192.0.0.7'], '191.255.255.255', 'ok'],
  ['192.0.0.8/32 dummy', ['192.0.0.8'], '192.0.0.7', P],
  ['192.0.0.9/32 PCP anycast', ['192.0.0.9'], '192.0.1.9', 'ok'],
  ['192.0.0.10/32 TURN anycast', ['192.0.0.10'], '192.0.1.10', 'ok'],
  ['192.0.0.170/32 NAT64 discovery', ['192.0.0.170'], '192.0.1.170', 'ok'],
  ['192.0.0.171/32 NAT64 discovery', ['192.0.0.171'], '192.0.1.171', 'ok'],
  ['192.0.2.0/24 TEST-NET-1', ['192.0.2.0', '192.0.2.255'], '192.0.3.0', 'ok'],
  ['192.31.196.0/24 AS112-v4', ['192.31.196.0', '192.31.196.255'], '192.31.197.0', 'ok'],
  ['192.52.193.0/24 AMT', ['192.52.193.0', '192.52.193.255'], '192.52.194.0', 'ok'],
  ['192.88.99.0/24 6to4 relay anycast', ['192.88.99.0', '192.88.99.255'], '192.88.100.0', 'ok'],
  ['192.168.0.0/16 private', ['192.168.0.0', '192.168.255.255'], '192.169.0.0', 'ok'],
  ['192.168.0.0/16 private, below', ['192.168.0.0'], '192.167.255.255', 'ok'],
  ['192.175.48.0/24 AS112 direct delegation', ['192.175.48.0', '192.175.48.255'], '192.175.49.0', 'ok'],
  ['198.18.0.0/15 benchmarking', ['198.18.0.0', '198.19.255.255'], '198.20.0.0', 'ok'],
  ['198.18.0.0/15 benchmarking, below', ['198.18.0.0'], '198.17.255.255', 'ok'],
  ['198.51.100.0/24 TEST-NET-2', ['198.51.100.0', '198.51.100.255'], '198.51.101.0', 'ok'],
  ['203.0.113.0/24 TEST-NET-3', ['203.0.113.0', '203.0.113.255'], '203.0.114.0', 'ok'],
  ['224.0.0.0/4 multicast', ['224.0.0.0', '239.255.255.255'], '223.255.255.255', 'ok'],
  ['240.0.0.0/4 reserved', ['240.0.0.0', '255.255.255.254'], '239.255.255.255', P],
  ['255.255.255.255/32 broadcast', ['255.255.255.255'], '8.8.8.8', 'ok'],
];

const IPV6: Row[] = [
  ['::/128 unspecified', ['::'], '::2', P],
  ['::1/128 loopback', ['::1'], '2000::1', 'ok'],
  ['::ffff:0:0/96 mapped (private inner)', ['::ffff:0:0', '::ffff:7f00:1', '::ffff:a9fe:a9fe', '::ffff:ffff:ffff'], '::1:0:0:0', P],
  ['64:ff9b::/96 NAT64 (private inner)', ['64:ff9b::', '64:ff9b::a00:1', '64:ff9b::ffff:ffff'], '64:ff9b::1:0:0', P],
  ['64:ff9b:1::/48 local-use translation', ['64:ff9b:1::', '64:ff9b:1:ffff:ffff:ffff:ffff:ffff', '64:ff9b:1::808:808'], '64:ff9b:2::', P],
  ['100::/64 discard-only', ['100::', '100::ffff:ffff:ffff:ffff'], '2001:4860::8888', 'ok'],
  ['100:0:0:1::/64 dummy prefix', ['100:0:0:1::', '100::1:ffff:ffff:ffff:ffff'], '2001:4860::8844', 'ok'],
  ['2001::/23 IETF protocol assignments', ['2001::', '2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff', '2001:100::1'], '2001:200::', 'ok'],
  ['2001::/32 Teredo (whatever it carries)', ['2001::', '2001:0:ffff:ffff:ffff:ffff:ffff:ffff', '2001:0:4136:e378:8000:63bf:f7f7:f7f7'], '2001:200::1', 'ok'],
  ['2001:1::1/128 PCP anycast', ['2001:1::1'], '2001:200::1:1', 'ok'],
  ['2001:1::2/128 TURN anycast', ['2001:1::2'], '2001:200::1:2', 'ok'],
  ['2001:1::3/128 DNS-SD SRP anycast', ['2001:1::3'], '2001:200::1:3', 'ok'],
  ['2001:2::/48 benchmarking', ['2001:2::', '2001:2:0:ffff:ffff:ffff:ffff:ffff'], '2001:200:2::', 'ok'],
  ['2001:3::/32 AMT', ['2001:3::', '2001:3:ffff:ffff:ffff:ffff:ffff:ffff'], '2001:200:3::', 'ok'],
  ['2001:4:112::/48 AS112-v6', ['2001:4:112::', '2001:4:112:ffff:ffff:ffff:ffff:ffff'], '2001:200:4:112::', 'ok'],
  ['2001:10::/28 ORCHID', ['2001:10::', '2001:1f:ffff:ffff:ffff:ffff:ffff:ffff'], '2001:210::', 'ok'],
  ['2001:20::/28 ORCHIDv2', ['2001:20::', '2001:2f:ffff:ffff:ffff:ffff:ffff:ffff'], '2001:220::', 'ok'],
  ['2001:30::/28 drone remote ID', ['2001:30::', '2001:3f:ffff:ffff:ffff:ffff:ffff:ffff'], '2001:230::', 'ok'],
  ['2001:db8::/32 documentation', ['2001:db8::', '2001:db8:ffff:ffff:ffff:ffff:ffff:ffff'], '2001:db9::', 'ok'],
  ['2002::/16 6to4 (whatever it carries)', ['2002::', '2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff', '2002:808:808::'], '2003::', 'ok'],
  ['2620:4f:8000::/48 AS112 direct delegation', ['2620:4f:8000::', '2620:4f:8000:ffff:ffff:ffff:ffff:ffff'], '2620:4f:8001::', 'ok'],
  ['3fff::/20 documentation', ['3fff::', '3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff'], '3fff:1000::', 'ok'],
  ['5f00::/16 SRv6 SIDs', ['5f00::', '5f00:ffff:ffff:ffff:ffff:ffff:ffff:ffff'], '5f01::', P],
  ['fc00::/7 unique-local', ['fc00::', 'fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'], 'fe00::', P],
  ['fe80::/10 link-local', ['fe80::', 'febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff'], 'fec0::', P],
  ['ff00::/8 multicast', ['ff00::', 'ff02::1', 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'], 'feff::', P],
  ['outside 2000::/3, below', ['1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', '::100:0:0'], '2000::', 'ok'],
  ['outside 2000::/3, above', ['4000::', 'e000::'], '3fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'ok'],
  ['::/96 IPv4-compatible (whatever it carries)', ['::808:808', '::7f00:1', '::ffff:ffff'], '::ffff:808:808', 'ok'],
];

function verdict(text: string, rules: AddressRules = NO_RULES): string {
  const a = parseAddress(text);
  if (a === undefined) throw new Error(`row address does not parse: ${text}`);
  return judgeAddress(a, rules);
}

for (const [family, rows] of [['IPv4', IPV4], ['IPv6', IPV6]] as const) {
  t.test(`${family} special-purpose blocks`, async (t) => {
    for (const [block, inside, outside, outsideVerdict] of rows) {
      for (const a of inside) t.equal(verdict(a), 'private_address', `${block}: ${a} inside`);
      t.equal(verdict(outside), outsideVerdict, `${block}: ${outside} outside`);
    }
  });
}

t.test('wrapped IPv4 is unwrapped and the inner address judged', async (t) => {
  const rows: [string, string, string][] = [
    ['mapped public', '::ffff:808:808', 'ok'],
    ['mapped loopback', '::ffff:7f00:1', 'private_address'],
    ['mapped metadata', '::ffff:a9fe:a9fe', 'private_address'],
    ['mapped 0.0.0.0', '::ffff:0:0', 'private_address'],
    ['NAT64 public', '64:ff9b::808:808', 'ok'],
    ['NAT64 private', '64:ff9b::a00:1', 'private_address'],
    ['NAT64 loopback', '64:ff9b::7f00:1', 'private_address'],
    ['6to4 carrying public', '2002:808:808::1', 'private_address'],
    ['Teredo carrying public', '2001:0:4136:e378:8000:63bf:f7f7:f7f7', 'private_address'],
    ['compatible carrying public', '::808:808', 'private_address'],
  ];
  for (const [name, a, want] of rows) t.equal(verdict(a), want, name);
});

t.test('GUARD_ALLOW_CIDRS opens only what it names', async (t) => {
  const rules: AddressRules = { allow: ['127.0.0.3/32', '10.20.0.0/16', 'fd00:1::/32'].map(parseCidr), self: new Set() };
  const rows: [string, string, string][] = [
    ['the allowed address', '127.0.0.3', 'ok'],
    ['next to it', '127.0.0.4', 'private_address'],
    ['before it', '127.0.0.2', 'private_address'],
    ['inside the allowed /16, first', '10.20.0.0', 'ok'],
    ['inside the allowed /16, last', '10.20.255.255', 'ok'],
    ['outside the allowed /16', '10.21.0.0', 'private_address'],
    ['mapped form of the allowed address', '::ffff:7f00:3', 'ok'],
    ['6to4 around the allowed address stays refused', '2002:7f00:3::', 'private_address'],
    ['allowed IPv6 range', 'fd00:1::5', 'ok'],
    ['IPv6 outside the allowed range', 'fd00:2::5', 'private_address'],
  ];
  for (const [name, a, want] of rows) t.equal(verdict(a, rules), want, name);
});

t.test('the service\'s own addresses are denied_host, after private_address', async (t) => {
  const rules: AddressRules = {
    allow: [parseCidr('10.0.0.0/8')],
    self: new Set(['8.8.4.4', '127.0.0.1', '10.1.2.3', '2606:4700::1111']),
  };
  const rows: [string, string, string][] = [
    ['own public address', '8.8.4.4', 'denied_host'],
    ['own address, mapped spelling', '::ffff:808:404', 'denied_host'],
    ['own IPv6 address', '2606:4700::1111', 'denied_host'],
    ['own loopback is private first', '127.0.0.1', 'private_address'],
    ['own address inside an allowed range stays denied', '10.1.2.3', 'denied_host'],
    ['another address in the allowed range', '10.1.2.4', 'ok'],
    ['a public address that is not ours', '8.8.8.8', 'ok'],
  ];
  for (const [name, a, want] of rows) t.equal(verdict(a, rules), want, name);
});

t.test('whatever GUARD_ALLOW_CIDRS opens, the service stays closed: its ranges on every port, this host on its ports', async (t) => {
  const opened: AddressRules = {
    allow: ['127.0.0.0/8', '0.0.0.0/32', '::1/128', '::/128', '10.0.0.0/8', 'fd00::/8'].map(parseCidr),
    self: new Set(),
    selfRanges: ['10.96.0.0/12', 'fd00:96::/32'].map(parseCidr),
    ownPorts: () => new Set([8080, 9080]),
  };
  const rows: [string, string, number, string][] = [
    ['an opened loopback alias on the public port', '127.0.0.2', 8080, 'denied_host'],
    ['the same alias on the admin port', '127.0.0.2', 9080, 'denied_host'],
    ['the same alias on a port the service does not use', '127.0.0.2', 8081, 'ok'],
    ['the last loopback address on a service port', '127.255.255.254', 8080, 'denied_host'],
    ['the mapped spelling of the alias', '::ffff:7f00:2', 8080, 'denied_host'],
    ['IPv6 loopback on a service port', '::1', 9080, 'denied_host'],
    ['IPv6 loopback on another port', '::1', 9081, 'ok'],
    ['0.0.0.0 reaches every local listener', '0.0.0.0', 8080, 'denied_host'],
    [':: reaches every local listener', '::', 9080, 'denied_host'],
    ['a self range (GUARD_SELF_ADDRESSES) on any port', '10.100.1.2', 443, 'denied_host'],
    ['its first address', '10.96.0.0', 1, 'denied_host'],
    ['past its end', '10.112.0.0', 8080, 'ok'],
    ['an IPv6 self range', 'fd00:96::1', 80, 'denied_host'],
    ['opened IPv6 outside it', 'fd00:97::1', 80, 'ok'],
  ];
  for (const [name, a, port, want] of rows) t.equal(judgeAddress(parseAddress(a)!, opened, port), want, name);

  const closed: AddressRules = { allow: [], self: new Set(), ownPorts: () => [8080] };
  t.equal(judgeAddress(parseAddress('127.0.0.2')!, closed, 8080), 'private_address', 'not opened: private first');
  t.equal(judgeAddress(parseAddress('127.0.0.2')!, { ...opened, ownPorts: undefined }, 8080), 'ok', 'no ports known: only the ranges');
});

t.test('only canonical addresses parse; odd spellings are left to the URL parser', async (t) => {
  for (const text of ['127.1', '0177.0.0.1', '0x7f.0.0.1', '2130706433', 'fe80::1%eth0', '1.2.3.4.5', '', 'example.com']) {
    t.equal(parseAddress(text), undefined, `${JSON.stringify(text)} is not an address`);
  }
  t.equal(parseAddress('127.0.0.1')?.toString(), '127.0.0.1');
  t.equal(parseAddress('2001:DB8::1')?.toString(), '2001:db8::1');
});

t.test('configured ranges parse strictly', async (t) => {
  t.same(parseCidr('127.0.0.3').map(String), ['127.0.0.3', '32']);
  t.same(parseCidr('fd00::/8').map(String), ['fd00::', '8']);
  for (const bad of ['127.0.0.0/33', '::/129', '10.0.0.0/x', 'example.com/8', '127.1/32']) {
    t.throws(() => parseCidr(bad), `${bad} refused`);
  }
});

t.test('a mapped address is dialled as the IPv4 address it is; others as themselves', async (t) => {
  t.same(dialTarget(parseAddress('::ffff:808:808')!), { address: '8.8.8.8', family: 4 });
  t.same(dialTarget(parseAddress('64:ff9b::808:808')!), { address: '64:ff9b::808:808', family: 6 });
  t.same(dialTarget(parseAddress('8.8.8.8')!), { address: '8.8.8.8', family: 4 });
});
