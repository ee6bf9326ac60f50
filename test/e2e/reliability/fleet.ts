/**
 * The service the load scenarios drive: `tintype start` with three plans generous enough that the
 * load reaches the renderer (the limits still answer their 429s), and keys spread over them.
 */
import { startService, type Service, type ServiceOptions } from '../service.ts';
import type { LoadKey } from './load.ts';

/** Three plans with different limits, none so small that the mix is mostly refusals. */
export const LOAD_PLANS = {
  bronze: { monthlyQuota: 1_000_000, perMinute: 600, concurrentRenders: 1 },
  silver: { monthlyQuota: 1_000_000, perMinute: 3_000, concurrentRenders: 2 },
  gold: { monthlyQuota: 10_000_000, perMinute: 100_000, concurrentRenders: 4 },
};

/** A render budget short enough that leases of a killed process expire within a test. */
export const LOAD_ENV = { TINTYPE_RENDER_TIMEOUT_MS: '8000', TINTYPE_LEASE_GRACE_MS: '2000' };

/** Starts the service with the load plans (on the given store settings). */
export function startLoadService(o: Omit<ServiceOptions, 'plans'> = {}): Promise<Service> {
  return startService({ ...o, plans: LOAD_PLANS, env: { ...LOAD_ENV, ...o.env } });
}

/** `count` keys, round-robin over the three plans. */
export async function loadKeys(svc: Service, count: number): Promise<LoadKey[]> {
  const plans = Object.keys(LOAD_PLANS);
  const keys: LoadKey[] = [];
  for (let i = 0; i < count; i++) keys.push(await svc.key(plans[i % plans.length]!));
  return keys;
}

/** Resolves once `check` holds, or with false after `ms`. */
export async function within(ms: number, check: () => boolean | Promise<boolean>): Promise<boolean> {
  const until = Date.now() + ms;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > until) return false;
    await new Promise((r) => setTimeout(r, 100));
  }
}
