/**
 * Signed leases (docs/security.md "The meter's walls"): policy grants a lease as a token that names the lease id,
 * the key id, the operation and the expiry, with an HMAC-SHA256 over those four under
 * `TINTYPE_LEASE_SECRET`. The renderer checks the token before any work and policy checks it
 * again on settle, so reaching a renderer's or policy's port is not enough to render or to
 * change the ledger. Several secrets may be in force (rotation): the first signs, all verify.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { LEASE_ID_FORM, OPERATIONS, type Operation } from './policy-contract.ts';

/** What a lease token says. */
export interface LeaseClaims {
  /** The lease id policy's ledger knows it by. */
  id: string;
  keyId: string;
  operation: Operation;
  /** Epoch ms after which the lease is worth nothing. */
  expiresAt: number;
}

/** The secrets in force, the signing one first; built once from the setting. */
export interface LeaseKeys {
  sign(claims: LeaseClaims): string;
  /** The claims of a token signed by any secret in force, or undefined for anything else. */
  verify(token: string): LeaseClaims | undefined;
}

const EXPIRY_FORM = /^\d{1,15}$/;
const SIGNATURE_BYTES = 32;

function mac(secret: Buffer, payload: string): Buffer {
  return createHmac('sha256', secret).update(payload, 'utf8').digest();
}

/** The signed part: four fields, none of which can hold a dot. */
function payloadOf(c: LeaseClaims): string {
  return `${c.id}.${c.keyId}.${c.operation}.${c.expiresAt}`;
}

/** Keys from the secrets of `TINTYPE_LEASE_SECRET` (lib/config.ts has checked there is one). */
export function leaseKeys(secrets: readonly string[]): LeaseKeys {
  if (secrets.length === 0) throw new Error('no lease secret');
  const keys = secrets.map((s) => Buffer.from(s, 'utf8'));
  return {
    sign(claims) {
      return `${payloadOf(claims)}.${mac(keys[0]!, payloadOf(claims)).toString('base64url')}`;
    },
    verify(token) {
      const parts = token.split('.');
      if (parts.length !== 5) return undefined;
      const [id, keyId, operation, expiry, signature] = parts as [string, string, string, string, string];
      if (!LEASE_ID_FORM.test(id) || !LEASE_ID_FORM.test(keyId) || !EXPIRY_FORM.test(expiry)) return undefined;
      if (!Object.hasOwn(OPERATIONS, operation)) return undefined;
      const given = Buffer.from(signature, 'base64url');
      if (given.length !== SIGNATURE_BYTES || given.toString('base64url') !== signature) return undefined;
      const payload = `${id}.${keyId}.${operation}.${expiry}`;
      // Every secret is tried, so the time taken does not say which one matched.
      let ok = false;
      for (const key of keys) if (timingSafeEqual(mac(key, payload), given)) ok = true;
      return ok ? { id, keyId, operation: operation as Operation, expiresAt: Number(expiry) } : undefined;
    },
  };
}
