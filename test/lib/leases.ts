/** Lease signing for tests that play policy's part: the secret every test role is started with. */
import { randomBytes } from 'node:crypto';
import { leaseKeys, type LeaseClaims } from '../../lib/lease.ts';
import type { Operation } from '../../lib/policy-contract.ts';

/** `TINTYPE_LEASE_SECRET` of test roles. */
export const TEST_LEASE_SECRET = 'test-lease-secret-0123456789abcdefghij';

/** The keys policy would sign with under TEST_LEASE_SECRET. */
export const testLeaseKeys = leaseKeys([TEST_LEASE_SECRET]);

/** A lease as policy would grant it for `operation`, an hour from now unless told otherwise. */
export function signedLease(operation: Operation, claims: Partial<LeaseClaims> = {}): string {
  return testLeaseKeys.sign({
    id: randomBytes(16).toString('base64url'),
    keyId: 'key_test',
    operation,
    expiresAt: Date.now() + 3_600_000,
    ...claims,
  });
}

/** The lease id a signed lease names: what policy's ledger records. */
export function leaseIdOf(token: string): string {
  return token.split('.', 1)[0]!;
}
