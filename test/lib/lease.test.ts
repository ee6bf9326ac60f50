import t from 'tap';
import { leaseKeys } from '../../lib/lease.ts';
import { leavesLeaseOpen } from '../../lib/policy-contract.ts';

const NEW = 'new-secret-0123456789abcdefghijklmnop';
const OLD = 'old-secret-0123456789abcdefghijklmnop';
const claims = { id: 'AAAAAAAAAAAAAAAAAAAAAA', keyId: 'key_abc', operation: 'pdf' as const, expiresAt: 1_800_000_000_000 };

t.test('rotation: the first secret signs, every secret verifies', async (t) => {
  const rotated = leaseKeys([NEW, OLD]);
  const before = leaseKeys([OLD]);
  t.same(rotated.verify(rotated.sign(claims)), claims, 'signed with the new secret');
  t.same(rotated.verify(before.sign(claims)), claims, 'a lease signed before the rotation still verifies');
  t.equal(rotated.sign(claims), leaseKeys([NEW]).sign(claims), 'the first secret signs');
  t.equal(before.verify(rotated.sign(claims)), undefined, 'a renderer that has only the old secret refuses the new one');
});

t.test('anything but a lease signed with a secret in force is refused', async (t) => {
  const keys = leaseKeys([NEW]);
  const good = keys.sign(claims);
  const [id, keyId, op, expiry, sig] = good.split('.') as [string, string, string, string, string];
  const rows: Array<[string, string]> = [
    ['empty', ''],
    ['another secret', leaseKeys([OLD]).sign(claims)],
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
