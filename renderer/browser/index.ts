/**
 * The Chromium pool: isolation, slots, supervision and the start-up self-test (docs/operations.md,
 * "Slots and supervision"; docs/security.md "Start-up self-test"). The operations code against these exports; keep them stable.
 */
export type {
  EgressAuditSink,
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
