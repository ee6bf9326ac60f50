/**
 * Targets as a browser spells them, judged end to end without a network: the resolver is an
 * injected table, and every row also says whether it may reach a resolver
 * at all (numeric hosts and refused names never do).
 */
import t from 'tap';
import { Judge, firstReason, judgeUrl } from '../../guard/judge.ts';
import { DnsFailure, type Resolve } from '../../guard/resolver.ts';
import { failingRequest, parseConnectTarget, parseRequestTarget, requestLineOf, rawHeader } from '../../guard/target.ts';
import type { SelfSet } from '../../guard/self.ts';

const ZONE: Record<string, string[] | DnsFailure> = {
  'public.example': ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'],
  'mixed.example': ['93.184.215.14', '10.0.0.7', '93.184.215.15'],
  'six-private.example': ['93.184.215.14', 'fd00::1'],
  'ourselves.example': ['8.8.4.4'],
  'own-and-private.example': ['8.8.4.4', '192.168.1.1'],
  'our-name.example': ['93.184.215.20'],
  'our-private-name.example': ['10.9.9.9'],
  'xn--r8jz45g.xn--zckzah': ['93.184.215.30'],
  'nxdomain.example': new DnsFailure('ENOTFOUND'),
  'slow.example': new DnsFailure('ETIMEOUT'),
  'empty.example': [],
  'garbage.example': ['not-an-address'],
  'internal-answer.example': ['169.254.169.254'],
};

function fakeResolver(): { resolve: Resolve; asked: string[] } {
  const asked: string[] = [];
  const resolve: Resolve = async (name) => {
    asked.push(name);
    const answer = ZONE[name.replace(/\.$/, '')];
    if (answer === undefined) throw new DnsFailure('ENOTFOUND');
    if (answer instanceof DnsFailure) throw answer;
    return answer;
  };
  return { resolve, asked };
}

const SELF: SelfSet = { addresses: new Set(['8.8.4.4']), ranges: [], names: new Set(['our-name.example', 'our-private-name.example']) };

function judgeWith(allowCidrs: string[] = []): { judge: Judge; asked: string[] } {
  const { resolve, asked } = fakeResolver();
  return { judge: new Judge({ resolve, allowCidrs, self: SELF }), asked };
}

// [scenario, URL, expected reason or 'ok', may it reach the resolver?]
type Row = [string, string, string, boolean];

const SPELLINGS: Row[] = [
  ['decimal', 'http://2130706433/', 'private_address', false],
  ['octal', 'http://0177.0.0.1/', 'private_address', false],
  ['hex, two parts', 'http://0x7f.1/', 'private_address', false],
  ['short form', 'http://127.1/', 'private_address', false],
  ['zero', 'http://0/', 'private_address', false],
  ['0.0.0.0', 'http://0.0.0.0:8080/', 'private_address', false],
  ['metadata address', 'http://169.254.169.254/latest/meta-data/', 'private_address', false],
  ['metadata, decimal', 'http://2852039166/', 'private_address', false],
  ['mixed IPv6, hex tail', 'http://[::ffff:7f00:1]/', 'private_address', false],
  ['mixed IPv6, dotted tail', 'http://[::ffff:127.0.0.1]/', 'private_address', false],
  ['NAT64', 'http://[64:ff9b::a00:1]/', 'private_address', false],
  ['6to4', 'http://[2002:7f00:1::]/', 'private_address', false],
  ['IPv6 loopback', 'http://[::1]:3128/', 'private_address', false],
  ['IPv6 unspecified', 'http://[::]/', 'private_address', false],
  ['zone id, encoded', 'http://[fe80::1%25eth0]/', 'bad_host', false],
  ['zone id, raw', 'http://[fe80::1%eth0]/', 'bad_host', false],
  ['trailing dot on an address', 'http://127.0.0.1./', 'private_address', false],
  ['trailing dot on localhost', 'http://localhost./', 'bad_host', false],
  ['upper case localhost', 'http://LOCALHOST/', 'bad_host', false],
  ['upper case .INTERNAL with trailing dot', 'http://Metadata.Google.INTERNAL./', 'bad_host', false],
  ['.local', 'http://printer.local/', 'bad_host', false],
  ['.localhost', 'http://api.localhost:8080/', 'bad_host', false],
  ['.home.arpa', 'http://router.home.arpa/', 'bad_host', false],
  ['IDN fullwidth localhost', 'http://ｌｏｃａｌｈｏｓｔ/', 'bad_host', false],
  ['IDN fullwidth .local', 'http://ｐｒｉｎｔｅｒ．ｌｏｃａｌ/', 'bad_host', false],
  ['ideographic dots in an address', 'http://127。0。0。1/', 'private_address', false],
  ['fullwidth digits', 'http://１２７.０.０.１/', 'private_address', false],
  ['percent-encoded address', 'http://%31%32%37.0.0.1/', 'private_address', false],
  ['IDN name resolves as punycode', 'http://例え.テスト/', 'ok', true],
  ['public address', 'http://93.184.215.14/', 'ok', false],
  ['public IPv6 address', 'https://[2606:4700:4700::1111]/', 'ok', false],
  ['upper case scheme', 'HTTP://93.184.215.14/', 'ok', false],
  ['public name', 'https://public.example/a?b=c', 'ok', true],
  ['public name, trailing dot', 'https://public.example./', 'ok', true],
];

const USERINFO: Row[] = [
  ['user before a private address', 'http://a@127.0.0.1/', 'credentials_in_url', false],
  ['name as user before a private address', 'http://evil.com@127.0.0.1/', 'credentials_in_url', false],
  ['fragment holding an @', 'http://127.0.0.1#@evil.com', 'private_address', false],
  ['query holding an @', 'http://127.0.0.1/?x=@evil.com', 'private_address', false],
  ['user and password', 'https://user:pass@public.example/', 'credentials_in_url', false],
  ['empty user and password', 'http://:@public.example/', 'credentials_in_url', false],
  ['empty user', 'http://@public.example/', 'credentials_in_url', false],
  ['backslashes', 'http:\\\\evil@93.184.215.14\\', 'credentials_in_url', false],
  ['credentials before localhost', 'http://a@localhost/', 'credentials_in_url', false],
];

const SCHEMES_AND_HOSTS: Row[] = [
  ['data:', 'data:text/html,<h1>hi</h1>', 'bad_scheme', false],
  ['javascript:', 'javascript:alert(1)', 'bad_scheme', false],
  ['file:', 'file:///etc/passwd', 'bad_scheme', false],
  ['ftp:', 'ftp://public.example/', 'bad_scheme', false],
  ['ws: as a page address', 'ws://public.example/', 'bad_scheme', false],
  ['bad scheme wins over credentials', 'ftp://a@127.0.0.1/', 'bad_scheme', false],
  ['empty host', 'http:///', 'bad_host', false],
  ['empty label', 'http://a..b/', 'bad_host', false],
  ['too many IPv4 parts', 'http://1.2.3.4.5/', 'bad_host', false],
  ['IPv4 part over 255', 'http://999.1.1.1/', 'bad_host', false],
  ['port zero', 'http://public.example:0/', 'bad_host', false],
  ['not a URL', 'not a url', 'bad_scheme', false],
];

const ANSWERS: Row[] = [
  ['several A records, one private', 'http://mixed.example/', 'private_address', true],
  ['private AAAA beside a public A', 'http://six-private.example/', 'private_address', true],
  ['answer is the metadata address', 'http://internal-answer.example/', 'private_address', true],
  ['answer is our own address', 'http://ourselves.example/', 'denied_host', true],
  ['our own and a private answer: private first', 'http://own-and-private.example/', 'private_address', true],
  ['our own name', 'http://our-name.example/', 'denied_host', true],
  ['our own name, upper case and trailing dot', 'http://OUR-NAME.example./', 'denied_host', true],
  ['our own name resolving privately: private first', 'http://our-private-name.example/', 'private_address', true],
  ['our own public address, literally', 'http://8.8.4.4/', 'denied_host', false],
  ['NXDOMAIN', 'http://nxdomain.example/', 'dns_failure', true],
  ['timeout', 'http://slow.example/', 'dns_failure', true],
  ['no answer', 'http://empty.example/', 'dns_failure', true],
  ['an answer that is not an address', 'http://garbage.example/', 'dns_failure', true],
];

for (const [title, rows] of [
  ['spelling tricks', SPELLINGS],
  ['userinfo tricks', USERINFO],
  ['schemes and malformed hosts', SCHEMES_AND_HOSTS],
  ['resolver answers', ANSWERS],
] as const) {
  t.test(title, async (t) => {
    for (const [scenario, url, want, mayResolve] of rows) {
      const { judge, asked } = judgeWith();
      const j = await judge.url(url);
      t.equal(j.ok ? 'ok' : j.reason, want, scenario);
      if (mayResolve) t.equal(asked.length, 1, `${scenario}: exactly one lookup`);
      else t.same(asked, [], `${scenario}: never reaches a resolver`);
    }
  });
}

t.test('the IDN name is looked up in its ASCII form and dialled at the address judged', async (t) => {
  const { judge, asked } = judgeWith();
  const j = await judge.url('http://例え.テスト/');
  t.same(asked, ['xn--r8jz45g.xn--zckzah']);
  t.ok(j.ok && j.addresses.length === 1 && j.addresses[0]!.address === '93.184.215.30');
});

t.test('judgeUrl answers every address that passed, for the renderer', async (t) => {
  const { judge } = judgeWith();
  t.same(await judgeUrl('https://public.example/', judge), {
    ok: true,
    addresses: ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'],
  });
  t.same(await judgeUrl('http://mixed.example/', judge), { ok: false, reason: 'private_address' });
});

t.test('GUARD_ALLOW_CIDRS opens a loopback test address and nothing next to it', async (t) => {
  const { judge } = judgeWith(['127.0.0.3/32']);
  t.ok((await judge.url('http://127.0.0.3:8080/')).ok, 'allowed address');
  t.ok((await judge.url('http://2130706435/')).ok, 'allowed address, decimal spelling');
  const next = await judge.url('http://127.0.0.4/');
  t.equal(next.ok ? 'ok' : next.reason, 'private_address');
  const local = await judge.url('http://localhost/');
  t.equal(local.ok ? 'ok' : local.reason, 'bad_host', 'names stay refused by name');
});

t.test('CONNECT authorities', async (t) => {
  const rows: [string, string, string][] = [
    ['loopback', '127.0.0.1:443', 'private_address'],
    ['hex loopback', '0x7f.1:443', 'private_address'],
    ['decimal loopback', '2130706433:443', 'private_address'],
    ['IPv6 loopback', '[::1]:443', 'private_address'],
    ['mapped IPv6 loopback', '[::ffff:127.0.0.1]:443', 'private_address'],
    ['zone id', '[fe80::1%25eth0]:443', 'bad_host'],
    ['localhost', 'localhost:443', 'bad_host'],
    ['no port', 'public.example', 'bad_host'],
    ['port zero', 'public.example:0', 'bad_host'],
    ['port too large', 'public.example:65536', 'bad_host'],
    ['a URL instead of an authority', 'http://public.example/', 'bad_host'],
    ['userinfo', 'user@public.example:443', 'credentials_in_url'],
    ['public name', 'public.example:443', 'ok'],
    ['public address', '93.184.215.14:8443', 'ok'],
  ];
  for (const [scenario, authority, want] of rows) {
    const { judge } = judgeWith();
    const j = await judge.judge(parseConnectTarget(authority));
    t.equal(j.ok ? 'ok' : j.reason, want, scenario);
  }
});

t.test('request targets Node may hand over, and those its parser rejects', async (t) => {
  const rows: [string, string, string, string][] = [
    ['origin-form names no host', 'GET', '/', 'bad_host'],
    ['scheme-relative names no host', 'GET', '//public.example/', 'bad_host'],
    ['asterisk', 'OPTIONS', '*', 'bad_host'],
    ['data:', 'GET', 'data:text/html,hi', 'bad_scheme'],
    ['javascript:', 'GET', 'javascript:alert(1)', 'bad_scheme'],
    ['absolute http', 'GET', 'http://public.example/x', 'ok'],
    ['CONNECT', 'CONNECT', 'public.example:443', 'ok'],
  ];
  for (const [scenario, method, target, want] of rows) {
    const parsed = parseRequestTarget(method, target);
    t.equal('reason' in parsed ? parsed.reason : 'ok', want, scenario);
  }
  const raw = Buffer.from('GET javascript:alert(1) HTTP/1.1\r\nHost: x\r\nProxy-Authorization: Basic abc\r\n\r\n');
  t.same(requestLineOf(raw), { method: 'GET', target: 'javascript:alert(1)' });
  t.equal(rawHeader(raw, 'proxy-authorization'), 'Basic abc');
  t.same(requestLineOf(Buffer.from('GET http://a b/ HTTP/1.1\r\n')), { method: 'GET', target: 'http://a b/' });
  t.equal(requestLineOf(Buffer.from('garbage\r\n')), undefined);
  const pipelined = Buffer.from('GET http://public.example/ HTTP/1.1\r\nHost: a\r\n\r\nGET data:x HTTP/1.1\r\nProxy-Authorization: Basic second\r\n\r\n');
  const failedAt = pipelined.indexOf('data:');
  t.same(requestLineOf(failingRequest(pipelined, failedAt)), { method: 'GET', target: 'data:x' }, 'the pipelined request that failed, not the first');
  t.equal(rawHeader(failingRequest(pipelined, failedAt), 'proxy-authorization'), 'Basic second');
  t.same(requestLineOf(failingRequest(raw, 4)), { method: 'GET', target: 'javascript:alert(1)' }, 'a lone request is itself');
  t.equal(failingRequest(raw, undefined), raw);
});

t.test('precedence of reasons', async (t) => {
  t.equal(firstReason(['denied_host', 'private_address']), 'private_address');
  t.equal(firstReason(['dns_failure', 'bad_host', 'bad_scheme']), 'bad_scheme');
  t.equal(firstReason(['denied_host', 'credentials_in_url']), 'credentials_in_url');
  t.equal(firstReason([]), undefined);
});
