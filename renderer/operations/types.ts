/**
 * What the operations need from the parts around them, as small interfaces: the Chromium pool
 * (renderer/browser), the guard's page-address judgement (guard judgeUrl) and the cache.
 */
import type { RejectReason } from '../../lib/errors.ts';
import type { LeaseClaims } from '../../lib/lease.ts';
import type { BrowserPool } from '../browser/index.ts';

export type { RenderContext, RenderJob } from '../browser/index.ts';

/** The Chromium pool as the operations use it (renderer/browser BrowserPool). */
export type RenderPool = Pick<BrowserPool, 'render' | 'selfTestPassed' | 'guardState' | 'stats'>;

/** The guard's verdict on a page address, asked before any slot is taken (spec 4.4 rule 3). */
export type UrlJudge = (url: string) => Promise<{ ok: true } | { ok: false; reason: RejectReason }>;

/** A call's signed lease as the renderer checked it: the token goes to the guard, the claims name the key's policy. */
export interface RenderLease {
  token: string;
  claims: LeaseClaims;
}

/** A finished answer body of a render operation. */
export interface Rendered {
  body: Buffer;
  contentType: string;
  cache: 'hit' | 'miss';
  /** Sub-resource connections the guard refused; undefined on a cache hit (spec 2.1). */
  blocked: number | undefined;
}
