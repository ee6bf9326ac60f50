/**
 * A key's egress policy (lib/egress.ts): which patterns are taken and in what form, which host
 * names they match (a wildcard only below a whole label), and the policy signed into a lease so
 * that nothing that cannot sign can change it (lib/lease.ts).
 */
import { generateKeyPairSync } from 'node:crypto';
import t from 'tap';
import { MAX_EGRESS_PATTERNS, egressText, hostMatcher, parseEgressPolicy, parseEgressText, parsePattern } from '../../lib/egress.ts';
import { MAX_LEASE_CHARS, leaseSigner, leaseVerifier } from '../../lib/lease.ts';

t.test('patterns: their canonical form, and what is refused', async (t) => {
  const rows: Array<[string, string, string | undefined]> = [
    ['a name', 'example.com', 'example.com'],
    ['upper case and a trailing dot', 'Example.COM.', 'example.com'],
    ['a wildcard', '*.example.org', '*.example.org'],
    ['a unicode name, as IDNA', 'bücher.example', 'xn--bcher-kva.example'],
    ['spaces around', '  example.com ', 'example.com'],
    ['an address', '10.0.0.1', undefined],
    ['a wildcard address', '*.10.0.0.1', undefined],
    ['a wildcard in the middle', 'a.*.example.com', undefined],
    ['a bare star', '*', undefined],
    ['a path', 'example.com/x', undefined],
    ['a port', 'example.com:443', undefined],
    ['a label ending in a hyphen', 'bad-.example.com', undefined],
    ['an empty label', 'a..example.com', undefined],
    ['a label of 64', `${'a'.repeat(64)}.example`, undefined],
    ['a label of 63', `${'a'.repeat(63)}.example`, `${'a'.repeat(63)}.example`],
  ];
  for (const [name, text, form] of rows) {
    if (form === undefined) t.throws(() => parsePattern(text), name);
    else t.equal(parsePattern(text), form, name);
  }
});

t.test('a list: sorted, each once, at most 64, one of two modes', async (t) => {
  const p = parseEgressPolicy('b.example, a.example,B.EXAMPLE,,');
  t.same(p, { mode: 'enforce', allow: ['a.example', 'b.example'] });
  t.equal(egressText(p), 'enforce:a.example,b.example');
  t.same(parseEgressText('report:a.example'), { mode: 'report', allow: ['a.example'] });
  t.throws(() => parseEgressText('report:b.example,a.example'), 'only the canonical text');
  t.throws(() => parseEgressPolicy('a.example', 'audit'), 'no third mode');
  t.throws(() => parseEgressPolicy(''), 'an empty list is not a policy (clear it instead)');
  const names = (n: number) => Array.from({ length: n }, (_, i) => `h${i}.example`);
  t.equal(parseEgressPolicy(names(MAX_EGRESS_PATTERNS - 1)).allow.length, 63, 'limit - 1');
  t.equal(parseEgressPolicy(names(MAX_EGRESS_PATTERNS)).allow.length, 64, 'limit');
  t.throws(() => parseEgressPolicy(names(MAX_EGRESS_PATTERNS + 1)), 'limit + 1');
  t.throws(() => parseEgressPolicy(Array.from({ length: 64 }, (_, i) => `${'a'.repeat(60)}.h${i}.example`)), 'longer than 4096 characters in all');
});

t.test('matching: exact names, and wildcards only through a whole label', async (t) => {
  const m = hostMatcher(parseEgressPolicy('example.com,*.example.org'));
  const rows: Array<[string, boolean]> = [
    ['example.com', true],
    ['EXAMPLE.com.', true],
    ['www.example.com', false],
    ['example.org', false],
    ['www.example.org', true],
    ['a.b.example.org', true],
    ['evil-example.com', false],
    ['evil-example.org', false],
    ['example.com.evil.net', false],
    ['example.org.evil.net', false],
    ['xexample.org', false],
    ['93.184.216.34', false],
  ];
  for (const [host, allowed] of rows) t.equal(m.allows(host), allowed, host);
});

t.test('the policy in a lease: signed with the rest, refused when changed', async (t) => {
  const keys = generateKeyPairSync('ed25519');
  const signer = leaseSigner(keys.privateKey);
  const verifier = leaseVerifier([keys.publicKey]);
  const egress = parseEgressPolicy('example.com');
  const claims = { id: 'AAAAAAAAAAAAAAAAAAAAAA', keyId: 'key_abc', operation: 'screenshot' as const, expiresAt: 1_800_000_000_000 };
  const plain = signer.sign(claims);
  t.equal(plain.split('.').length, 5, 'a key without a policy: the lease as before');
  t.same(verifier.verify(plain), claims);
  const token = signer.sign({ ...claims, egress });
  t.same(verifier.verify(token), { ...claims, egress });
  const parts = token.split('.');
  const wider = Buffer.from('enforce:*.com,example.com').toString('base64url');
  t.equal(verifier.verify([...parts.slice(0, 4), wider, parts[5]].join('.')), undefined, 'a wider list under the same signature');
  t.equal(verifier.verify([...parts.slice(0, 4), parts[5]].join('.')), undefined, 'the list taken out');
  const longest = parseEgressPolicy(Array.from({ length: 64 }, (_, i) => `${'a'.repeat(50)}.h${String(i).padStart(2, '0')}.example`));
  t.ok(egressText(longest).length <= 4_096 + 8);
  const big = signer.sign({ ...claims, id: 'A'.repeat(64), keyId: 'k'.repeat(64), operation: 'html-to-image', egress: longest });
  t.ok(big.length <= MAX_LEASE_CHARS, `the longest lease (${big.length}) fits MAX_LEASE_CHARS`);
  t.same(verifier.verify(big)?.egress, longest);
});
