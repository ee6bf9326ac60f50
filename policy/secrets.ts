/**
 * API key secrets (spec Part 5): `sk_` followed by 32 random bytes in base64url. Only the
 * SHA-256 of a secret is stored; a secret with 256 bits of entropy needs no slow hash, and a
 * fast one lets every request, well-formed or not, cost the same single lookup.
 */
import { createHash, randomBytes } from 'node:crypto';

export const SECRET_PREFIX = 'sk_';
const SECRET_BYTES = 32;
/** The exact shape of a secret this service issues. */
export const SECRET_SHAPE = /^sk_[A-Za-z0-9_-]{43}$/;

/** A new secret; shown once to the operator, never stored. */
export function newSecret(): string {
  return SECRET_PREFIX + randomBytes(SECRET_BYTES).toString('base64url');
}

/** A new key id: public, safe to log, passed upstream as `x-tintype-key`. */
export function newKeyId(): string {
  return 'key_' + randomBytes(9).toString('base64url');
}

const LEASE_ID_BYTES = 16;
/** Random bytes for lease ids, drawn from the CSPRNG in blocks: one draw per check costs more than the rest of the id. */
const LEASE_POOL_BYTES = LEASE_ID_BYTES * 256;
let leasePool = Buffer.alloc(0);
let leasePoolAt = LEASE_POOL_BYTES;

/** A new lease id: 128 random bits, base64url. Each bit of the pool is used once. */
export function newLeaseId(): string {
  if (leasePoolAt + LEASE_ID_BYTES > leasePool.length) {
    leasePool = randomBytes(LEASE_POOL_BYTES);
    leasePoolAt = 0;
  }
  const id = leasePool.toString('base64url', leasePoolAt, leasePoolAt + LEASE_ID_BYTES);
  leasePoolAt += LEASE_ID_BYTES;
  return id;
}

/** The stored form of a secret. */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

/**
 * The value to look up for an `authorization` header. Every header, missing or malformed
 * included, yields a hash to look up, so all four 401 cases do the same work (spec Part 5
 * rule 4). A malformed one is hashed with a marker no issued secret can match.
 */
export function lookupHash(authorization: string | undefined): string {
  const m = /^Bearer ([^\s]+)$/i.exec(authorization ?? '');
  const candidate = m?.[1];
  if (candidate !== undefined && SECRET_SHAPE.test(candidate)) return hashSecret(candidate);
  return hashSecret('malformed:' + (authorization ?? ''));
}
