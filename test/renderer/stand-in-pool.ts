/**
 * A render pool that never reaches a browser, for the tests of the meter around the renderer
 * (test/envoy/metering.test.ts, test/policy/single-use-suite.ts): busy while `busy` is set, else
 * it answers a fixed 1×1 PNG after `holdMs`, counting the renders it made.
 */
import { ServiceError } from '../../lib/errors.ts';
import type { RenderPool } from '../../renderer/operations/index.ts';

/** The PNG every render of the stand-in answers. */
export const STAND_IN_PNG = Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8cfc0f01f0005000201a2dd2b2a0000000049454e44ae426082', 'hex');

export type StandInPool = RenderPool & { busy: boolean; renders: number };

/** A stand-in pool; `holdMs` keeps each render's slot a while, so attempts can overlap. */
export function standInPool(holdMs = 0): StandInPool {
  const pool = {
    busy: false,
    renders: 0,
    async render<T>(): Promise<{ value: T; tally: { blocked: number; firstReason: null } }> {
      if (pool.busy) throw new ServiceError('busy');
      pool.renders += 1;
      if (holdMs > 0) await new Promise((r) => setTimeout(r, holdMs));
      return { value: STAND_IN_PNG as unknown as T, tally: { blocked: 0, firstReason: null } };
    },
    selfTestPassed: () => true,
    stats: () => ({ slots: 1, busy: 0, renders: pool.renders, restarts: 0, browserMemoryBytes: 0, readyContexts: 0 }),
  };
  return pool as unknown as StandInPool;
}
