/** Lease signing for tests that play policy's part: the key pair every test role is started with. */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { leaseKeyText, leaseSigner, type LeaseClaims } from '../../lib/lease.ts';
import type { Operation } from '../../lib/policy-contract.ts';
import { RenderTokens } from '../../lib/render-token.ts';
import { newRendererToken, rendererTokenHeaders } from '../../lib/renderer-token.ts';

const pair = generateKeyPairSync('ed25519');
const tokenKey = randomBytes(32).toString('base64');

/** The token test renderers present to test policies (lib/renderer-token.ts). */
export const TEST_RENDERER_TOKEN = newRendererToken();

/** The header a test renderer sends policy's renderer listener. */
export const TEST_RENDERER_AUTH = Object.freeze(rendererTokenHeaders(TEST_RENDERER_TOKEN));

/**
 * The key settings of test roles: policy signs with the private key, renderers hold the public
 * one; a guard and the renderers using it share the render token key (lib/render-token.ts);
 * policy and the renderers hold the renderer token.
 */
export const TEST_LEASE_ENV = Object.freeze({
  TINTYPE_LEASE_SIGNING_KEY: leaseKeyText(pair.privateKey),
  TINTYPE_LEASE_PUBLIC_KEYS: leaseKeyText(pair.publicKey),
  GUARD_TOKEN_KEY: tokenKey,
  TINTYPE_RENDERER_TOKEN: TEST_RENDERER_TOKEN,
});

/** The render token key of TEST_LEASE_ENV: a guard of a test's own, and the endpoint of a pool using it. */
export const testGuardTokens = RenderTokens.fromKeyText(tokenKey)!;

/** The key pair itself: a guard of a test's own checks leases with its public key. */
export const testLeaseKeyPair = pair;

/** The signer policy would sign with under TEST_LEASE_ENV. */
export const testLeaseKeys = leaseSigner(pair.privateKey);

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

/** A signer with a key pair of its own: what a forger without policy's private key can make. */
export function otherLeaseKeys(): ReturnType<typeof leaseSigner> {
  return leaseSigner(generateKeyPairSync('ed25519').privateKey);
}

/** The lease id a signed lease names: what policy's ledger records. */
export function leaseIdOf(token: string): string {
  return token.split('.', 1)[0]!;
}
