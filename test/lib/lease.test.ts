import { generateKeyPairSync } from 'node:crypto';
import t from 'tap';
import { leaseKeyText, leaseSigner, leaseVerifier, parseLeasePrivateKey, parseLeasePublicKey, rememberVerified } from '../../lib/lease.ts';
import { leavesLeaseOpen } from '../../lib/policy-contract.ts';

const NEW = generateKeyPairSync('ed25519');
const OLD = generateKeyPairSync('ed25519');
const claims = { id: 'AAAAAAAAAAAAAAAAAAAAAA', keyId: 'key_abc', operation: 'pdf' as const, expiresAt: 1_800_000_000_000 };

t.test('rotation: one private key signs, every public key in force verifies', async (t) => {
  const renderer = leaseVerifier([NEW.publicKey, OLD.publicKey]);
  const before = leaseSigner(OLD.privateKey);
  const after = leaseSigner(NEW.privateKey, [OLD.publicKey]);
  t.same(renderer.verify(after.sign(claims)), claims, 'signed with the new key');
  t.same(renderer.verify(before.sign(claims)), claims, 'a lease signed before the switch still verifies');
  t.same(after.verify(before.sign(claims)), claims, 'policy still settles a lease its previous key signed');
  t.equal(leaseVerifier([OLD.publicKey]).verify(after.sign(claims)), undefined, 'a renderer that has only the old public key refuses the new signer: add the public key first');
});

t.test('a renderer holds nothing that signs: its public key cannot be used to sign', async (t) => {
  const text = leaseKeyText(NEW.publicKey);
  t.throws(() => parseLeasePrivateKey(text), 'a public key is not a signing key');
  t.throws(() => parseLeasePublicKey(leaseKeyText(NEW.privateKey)), 'a private key is refused where public keys go (DER)');
  t.throws(() => parseLeasePublicKey(String(NEW.privateKey.export({ format: 'pem', type: 'pkcs8' }))), 'and as PEM');
  t.ok(parseLeasePublicKey(text).equals(NEW.publicKey), 'base64 DER round-trips');
  t.ok(parseLeasePublicKey(String(NEW.publicKey.export({ format: 'pem', type: 'spki' }))).equals(NEW.publicKey), 'PEM is read too');
  const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 });
  t.throws(() => parseLeasePublicKey(leaseKeyText(rsa.publicKey)), 'only Ed25519');
});

t.test('anything but a lease signed by a key in force is refused', async (t) => {
  const keys = leaseSigner(NEW.privateKey);
  const good = keys.sign(claims);
  const [id, keyId, op, expiry, sig] = good.split('.') as [string, string, string, string, string];
  const rows: Array<[string, string]> = [
    ['empty', ''],
    ['another key', leaseSigner(OLD.privateKey).sign(claims)],
    ['another key id', [id, 'key_other', op, expiry, sig].join('.')],
    ['another operation', [id, keyId, 'ping', expiry, sig].join('.')],
    ['a later expiry', [id, keyId, op, String(Number(expiry) + 1), sig].join('.')],
    ['an operation that does not exist', [id, keyId, 'toString', expiry, sig].join('.')],
    ['a cut signature', [id, keyId, op, expiry, sig.slice(0, -1)].join('.')],
    ['a signature with padding', [id, keyId, op, expiry, sig + '='].join('.')],
    ['a field too many', `${good}.x`],
    ['no signature', [id, keyId, op, expiry].join('.')],
  ];
  for (const [name, token] of rows) t.equal(keys.verify(token), undefined, name);
  t.same(keys.verify(good), claims, 'the lease itself');
  t.same(leaseVerifier([NEW.publicKey]).verify(good), claims, 'and a renderer with the public key only');
});

t.test('a signer that remembers verified tokens answers as the signer does, checking a signature once per token it holds', async (t) => {
  const signer = leaseSigner(NEW.privateKey);
  let checked = 0;
  const counted = { sign: signer.sign, verify: (token: string) => (checked++, signer.verify(token)) };
  const good = signer.sign(claims);
  const other = signer.sign({ ...claims, id: 'BBBBBBBBBBBBBBBBBBBBBB' });
  const keys = rememberVerified(counted, good.length + other.length);
  t.same(keys.verify(good), claims, 'a claim verifies it');
  const held = keys.verify(good)!;
  t.same(held, claims, 'its settle is answered the same');
  t.equal(checked, 1, 'from memory');
  held.keyId = 'key_other';
  t.same(keys.verify(good), claims, 'what a caller does to its answer is not remembered');
  const [id, , op, expiry, sig] = good.split('.') as [string, string, string, string, string];
  t.equal(keys.verify([id, 'key_other', op, expiry, sig].join('.')), undefined, 'its signature on other claims is refused');
  t.equal(keys.verify(leaseSigner(OLD.privateKey).sign(claims)), undefined, 'the same claims signed by a key not in force are refused');
  t.equal(checked, 3, 'each checked');
  t.same(keys.verify(other), { ...claims, id: 'BBBBBBBBBBBBBBBBBBBBBB' }, 'another lease');
  t.same(keys.verify(signer.sign({ ...claims, id: 'CCCCCCCCCCCCCCCCCCCCCC' }))?.id, 'CCCCCCCCCCCCCCCCCCCCCC', 'and a third, past the bound');
  checked = 0;
  t.same(keys.verify(good), claims, 'the oldest, forgotten, still verifies');
  t.equal(checked, 1, 'by its signature again');
});

t.test('a 503 leaves its lease open only on an attempt the edge may still retry', async (t) => {
  const rows: Array<[string, number, string | undefined, boolean]> = [
    ['503 on the first of two attempts', 503, '1', true],
    ['503 on the last attempt', 503, '2', false],
    ['503 with no attempt count (an edge that will not retry)', 503, undefined, false],
    ['503 with a count that is not a number', 503, 'one', false],
    ['503 on attempt 0', 503, '0', false],
    ['200 on the first attempt', 200, '1', false],
    ['502 on the first attempt', 502, '1', false],
  ];
  for (const [name, status, attempt, open] of rows) t.equal(leavesLeaseOpen(status, attempt), open, name);
});
