/**
 * Signed leases (docs/architecture.md §4): policy grants a lease as a token that names the lease
 * id, the key id, the operation and the expiry, with an Ed25519 signature over those four. Policy
 * alone holds the private key (`TINTYPE_LEASE_SIGNING_KEY`); renderers hold only public keys
 * (`TINTYPE_LEASE_PUBLIC_KEYS`), so a renderer, or whatever runs in its pod, can check a lease but
 * never mint one. The renderer checks the token before any work and policy checks it again on
 * claim and settle. Several public keys may verify (rotation); one private key signs.
 */
import { type KeyObject, createPrivateKey, createPublicKey, sign as edSign, verify as edVerify } from 'node:crypto';
import { type EgressPolicy, egressText, parseEgressText } from './egress.ts';
import { LEASE_ID_FORM, OPERATIONS, type Operation } from './policy-contract.ts';

/** What a lease token says. */
export interface LeaseClaims {
  /** The lease id policy's ledger knows it by. */
  id: string;
  keyId: string;
  operation: Operation;
  /** Epoch ms after which the lease is worth nothing. */
  expiresAt: number;
  /**
   * The key's egress policy when it has one (lib/egress.ts), signed with the rest: the guard
   * holds the render to it, and nothing that cannot sign can widen it.
   */
  egress?: EgressPolicy;
}

/** Checks leases against the public keys in force; built once from the setting. */
export interface LeaseVerifier {
  /** The claims of a token signed by the private key of any public key in force, or undefined for anything else. */
  verify(token: string): LeaseClaims | undefined;
}

/** Signs leases with policy's private key, and verifies them as a renderer does. */
export interface LeaseSigner extends LeaseVerifier {
  sign(claims: LeaseClaims): string;
}

const EXPIRY_FORM = /^\d{1,15}$/;
/**
 * The longest a lease token can be: ids, operation and expiry, a signature, and the base64url of
 * the longest egress policy (lib/egress.ts MAX_EGRESS_TEXT). Bodies that carry a lease allow it.
 */
export const MAX_LEASE_CHARS = 8_192;
const SIGNATURE_BYTES = 64;

/** The form of the egress field: the base64url of the policy's text (lib/egress.ts egressText). */
const EGRESS_FIELD_FORM = /^[A-Za-z0-9_-]{1,7000}$/;

/** The signed part: four fields and, for a key with an egress policy, a fifth; none can hold a dot. */
function payloadOf(c: LeaseClaims): string {
  const egress = c.egress === undefined ? '' : `.${Buffer.from(egressText(c.egress), 'utf8').toString('base64url')}`;
  return `${c.id}.${c.keyId}.${c.operation}.${c.expiresAt}${egress}`;
}

/** The policy of a lease's egress field, or undefined when it is not one. */
function egressOf(field: string): EgressPolicy | undefined {
  if (!EGRESS_FIELD_FORM.test(field)) return undefined;
  try {
    return parseEgressText(Buffer.from(field, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
}

/** A verifier for leases signed by the private keys of `publicKeys` (lib/config.ts has parsed them). */
export function leaseVerifier(publicKeys: readonly KeyObject[]): LeaseVerifier {
  if (publicKeys.length === 0) throw new Error('no lease public key');
  return {
    verify(token) {
      const parts = token.split('.');
      if (parts.length !== 5 && parts.length !== 6) return undefined;
      const [id, keyId, operation, expiry] = parts as [string, string, string, string];
      const signature = parts[parts.length - 1]!;
      if (!LEASE_ID_FORM.test(id) || !LEASE_ID_FORM.test(keyId) || !EXPIRY_FORM.test(expiry)) return undefined;
      if (!Object.hasOwn(OPERATIONS, operation)) return undefined;
      const egress = parts.length === 6 ? egressOf(parts[4]!) : undefined;
      if (parts.length === 6 && egress === undefined) return undefined;
      const given = Buffer.from(signature, 'base64url');
      if (given.length !== SIGNATURE_BYTES || given.toString('base64url') !== signature) return undefined;
      const payload = Buffer.from(parts.slice(0, -1).join('.'), 'utf8');
      // A public key says nothing secret: which one matched may show in the time taken.
      if (!publicKeys.some((key) => edVerify(null, payload, key, given))) return undefined;
      return { id, keyId, operation: operation as Operation, expiresAt: Number(expiry), ...(egress === undefined ? {} : { egress }) };
    },
  };
}

/**
 * A signer with policy's private key. It verifies with that key's own public key and the
 * further `publicKeys` in force (a previous signer's, during a rotation).
 */
export function leaseSigner(privateKey: KeyObject, publicKeys: readonly KeyObject[] = []): LeaseSigner {
  const own = createPublicKey(privateKey);
  const verifier = leaseVerifier([own, ...publicKeys.filter((k) => !k.equals(own))]);
  return {
    sign(claims) {
      const payload = payloadOf(claims);
      return `${payload}.${edSign(null, Buffer.from(payload, 'utf8'), privateKey).toString('base64url')}`;
    },
    verify: verifier.verify,
  };
}

/** How many characters of tokens rememberVerified() holds at most (a few thousand leases). */
const REMEMBERED_LEASE_CHARS = 2 * 1024 * 1024;

/**
 * The same signer, remembering the tokens it verified lately: policy verifies a lease on its
 * claim and again on its settle, and a token that verified once verifies again (the public keys
 * in force are fixed for the process), so the second costs no signature check. Only tokens that
 * verified are kept, the oldest forgotten first past `maxChars`.
 */
export function rememberVerified(signer: LeaseSigner, maxChars = REMEMBERED_LEASE_CHARS): LeaseSigner {
  const known = new Map<string, LeaseClaims>();
  let chars = 0;
  return {
    sign: signer.sign,
    verify(token) {
      const held = known.get(token);
      if (held !== undefined) return { ...held };
      const claims = signer.verify(token);
      if (claims === undefined) return undefined;
      known.set(token, claims);
      chars += token.length;
      for (const [old] of known) {
        if (chars <= maxChars) break;
        known.delete(old);
        chars -= old.length;
      }
      return { ...claims };
    },
  };
}

/** A key's text as node:crypto reads it: PEM, or the base64 (or base64url) of its DER. */
function keyBytes(text: string): { pem: string } | { der: Buffer } {
  if (text.includes('-----BEGIN')) return { pem: text };
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(text)) throw new Error('not PEM or base64');
  return { der: Buffer.from(text, /[+/=]/.test(text) ? 'base64' : 'base64url') };
}

/** An Ed25519 private key from PEM or the base64 of its PKCS#8 DER; throws on anything else. */
export function parseLeasePrivateKey(text: string): KeyObject {
  const k = keyBytes(text);
  const key = 'pem' in k ? createPrivateKey(k.pem) : createPrivateKey({ key: k.der, format: 'der', type: 'pkcs8' });
  if (key.asymmetricKeyType !== 'ed25519') throw new Error('not an Ed25519 key');
  return key;
}

/** An Ed25519 public key from PEM or the base64 of its SPKI DER; throws on anything else (a private key included). */
export function parseLeasePublicKey(text: string): KeyObject {
  // createPublicKey would derive the public half of a private PEM: refuse it, it mints leases.
  if (text.includes('PRIVATE KEY')) throw new Error('a private key, not a public one');
  const k = keyBytes(text);
  const key = 'pem' in k ? createPublicKey(k.pem) : createPublicKey({ key: k.der, format: 'der', type: 'spki' });
  if (key.asymmetricKeyType !== 'ed25519') throw new Error('not an Ed25519 public key');
  return key;
}

/** The 32-byte seed of an Ed25519 private key: what must be random. */
export function leaseKeySeed(privateKey: KeyObject): Buffer {
  return Buffer.from(String(privateKey.export({ format: 'jwk' }).d), 'base64url');
}

/** The settings' form of a key: the base64 of its DER (PKCS#8 for private, SPKI for public). */
export function leaseKeyText(key: KeyObject): string {
  return key.type === 'private'
    ? key.export({ format: 'der', type: 'pkcs8' }).toString('base64')
    : key.export({ format: 'der', type: 'spki' }).toString('base64');
}
