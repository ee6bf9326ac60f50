/**
 * Key administration behind `tintype keys` (spec Part 5 rules 1, 2; docs/architecture.md §1): a secret is
 * created, shown once and never stored; list shows everything but the secret; revoke takes
 * effect from the next request, because every check looks the key up in the store.
 */
import { ConfigError } from '../lib/config.ts';
import type { EgressPolicy } from '../lib/egress.ts';
import type { Plans } from './plans.ts';
import { hashSecret, newKeyId, newSecret } from './secrets.ts';
import type { KeyRecord, PolicyStore } from './store/store.ts';

export interface CreatedKey extends KeyRecord {
  /** The only time the secret exists outside the caller's hands. */
  secret: string;
}

const NAME = /^[\x20-\x7e]{0,100}$/;

/** Creates a key on `plan`; the answer carries the secret, the store only its hash. */
export async function createKey(
  store: PolicyStore,
  plans: Plans,
  options: { plan: string; name?: string; now?: number },
): Promise<CreatedKey> {
  if (!Object.hasOwn(plans, options.plan)) {
    throw new ConfigError(`unknown plan "${options.plan}" (plans: ${Object.keys(plans).join(', ')})`);
  }
  const name = options.name ?? '';
  if (!NAME.test(name)) throw new ConfigError('--name must be at most 100 printable ASCII characters');
  const secret = newSecret();
  const key: KeyRecord = { id: newKeyId(), name, plan: options.plan, createdAt: options.now ?? Date.now(), revokedAt: null };
  await store.createKey({ ...key, hash: hashSecret(secret) });
  return { ...key, secret };
}

/** Every key, secrets never included (there is nothing to include: only hashes are stored). */
export async function listKeys(store: PolicyStore): Promise<KeyRecord[]> {
  return store.listKeys();
}

/**
 * Sets a key's egress policy (or clears it, with undefined); false when there is no such key. In
 * every policy replica's leases within a second (policy/egress.ts), for renders that start after.
 */
export async function setKeyEgress(store: PolicyStore, id: string, policy: EgressPolicy | undefined, now = Date.now()): Promise<boolean> {
  return store.egress.setPolicy(id, policy, now);
}

/** Revokes a key; false when there is no such active key. */
export async function revokeKey(store: PolicyStore, id: string, now = Date.now()): Promise<boolean> {
  return store.revokeKey(id, now);
}
