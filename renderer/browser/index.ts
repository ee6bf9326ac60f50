/**
 * The Chromium pool: isolation, slots, supervision and the start-up self-test (README,
 * "Slots and supervision"). The operations code against these exports; keep them stable.
 */
export type {
  BrowserPool,
  BrowserPoolOptions,
  LaunchBrowser,
  PoolStats,
  PoolTimings,
  RenderContext,
  RenderJob,
  RenderResult,
} from './types.ts';
export type { RenderTally } from '../../lib/guard-contract.ts';
export type { GuardEndpoint } from './guard-endpoint.ts';
export { guardEndpointFromConfig } from './guard-endpoint.ts';
export { createBrowserPool } from './pool.ts';
export { chromiumExecutable } from './chromium.ts';
