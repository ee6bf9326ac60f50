/**
 * The browser pool's public surface, as the operations code it (docs/operations.md, "Slots and supervision").
 * Keep it stable: operations, the server and the bench are written against it.
 */
import type { Page, Browser, LaunchOptions } from 'puppeteer-core';
import type { Config } from '../../lib/config.ts';
import type { EgressAuditEntry } from '../../lib/egress.ts';
import type { RenderTally } from '../../lib/guard-contract.ts';
import type { GuardState } from '../../lib/state-contract.ts';
import type { Lifecycle } from '../../lib/lifecycle.ts';
import type { Logger } from '../../lib/log.ts';
import type { Registry } from '../../lib/metrics.ts';
import type { GuardEndpoint } from './guard-endpoint.ts';
import type { LookupAll } from './guard-pins.ts';
import type { PreparedPage } from './prepared-page.ts';

/** What a render's code gets: its page (in a fresh context), its abort signal and its tally so far. */
export interface RenderContext {
  /**
   * A fresh blank tab in a fresh incognito context, proxied through the guard, closed after the
   * render, driven over raw CDP (prepared-page.ts): the default renders use nothing else.
   */
  cdp: PreparedPage;
  /** The same tab as a puppeteer Page, made on first call (for everything the raw path does not drive). */
  page(): Promise<Page>;
  /** Aborted when the deadline passes, the client goes away or the browser crashes. */
  signal: AbortSignal;
  /** Refusals so far for this render (asks the guard). Counts accumulate over calls. */
  tally(): Promise<RenderTally>;
}

/** One render to run on a slot. */
export interface RenderJob<T> {
  /** Epoch ms: the whole render's budget, waiting for a context included (TINTYPE_RENDER_TIMEOUT_MS). */
  deadline: number;
  /** Aborted when the client went away. */
  signal?: AbortSignal;
  /**
   * The call's signed lease: the render's token is opened with it at the guard before the page
   * gets any work, so the guard holds every fetch to the key's egress policy and records it
   * (docs/architecture.md §7 rule 4a). None for the self-test.
   */
  lease?: string;
  run(ctx: RenderContext): Promise<T>;
}

/** A render's value and the guard's refusal tally for it (the `x-render-blocked` count). */
export interface RenderResult<T> {
  value: T;
  tally: RenderTally;
}

/** Counters of the pool, for health answers and the bench. */
export interface PoolStats {
  slots: number;
  busy: number;
  /** Busy slots averaged over time across the last few seconds (lib/state-contract.ts, busyMean). */
  busyMean: number;
  renders: number;
  restarts: number;
  /** Chromium's memory at the last look (sum of its processes' PSS, bytes; 0 before the first look). */
  browserMemoryBytes: number;
  /** Fresh contexts of the current browser prepared and waiting for a render. */
  readyContexts: number;
  /** Whether Chromium runs with its own sandbox (lib/state-contract.ts, sandbox). */
  sandbox: boolean;
}

export interface BrowserPool extends Lifecycle {
  /**
   * Runs `job` on a free slot.
   * - No free slot: throws ServiceError('busy') at once (no hidden queue).
   * - Self-test not passed yet: throws ServiceError('guard_unverified').
   * - A fresh incognito context and one page per render, closed after it.
   * - Past the deadline: the context is destroyed and ServiceError('render_timeout') thrown.
   * - The browser crashes mid-render: ServiceError('render_failed') at once.
   * - `job.signal` aborted: the context is destroyed, the slot freed at once, and the signal's
   *   reason (or an AbortError) is thrown.
   * - The guard cannot answer the tally: ServiceError('render_failed').
   * - The page's renderer process crashed (or `job.run` failed on a page that no longer
   *   answers): ServiceError('render_failed').
   * Other errors thrown by `job.run` pass through unchanged. The page's alert/confirm/prompt
   * dialogs are dismissed and its downloads denied.
   */
  render<T>(job: RenderJob<T>): Promise<RenderResult<T>>;
  /** True once the start-up self-test proved the walls hold (feeds /healthz/ready). */
  selfTestPassed(): boolean;
  /** The guard as the operator reads it on `/state`: verified, not yet verified, or lost after it was. */
  guardState(): GuardState;
  stats(): PoolStats;
}

/** Launches a browser; puppeteer's `launch` by default (a seam for tests). */
export type LaunchBrowser = (options: LaunchOptions) => Promise<Browser>;

export interface BrowserPoolOptions {
  config: Pick<
    Config,
    'chromiumPath' | 'slots' | 'renderTimeoutMs' | 'recycleAfterRenders' | 'browserMaxRssMb' | 'isolation' | 'guardAllowCidrs' | 'maxOutputBytes'
  > &
    Partial<Pick<Config, 'chromiumUid' | 'browserSocket'>>;
  logger: Logger;
  registry?: Registry;
  /** The guard, started by the caller (or elsewhere: guardEndpointFromConfig). */
  guard: GuardEndpoint;
  /** How the guard's name in `GUARD_URL` is resolved in pod isolation (guard-pins.ts); the system resolver by default. */
  guardLookup?: LookupAll;
  launch?: LaunchBrowser;
  /**
   * netns isolation: also create a user namespace, so a renderer that is not root can create
   * the namespaces (default: exactly when not running as root). Chromium then runs as the
   * renderer's own uid, seen from the host.
   */
  netnsUserNamespace?: boolean;
  /** Supervision intervals; the defaults suit production, tests shorten them. */
  timings?: PoolTimings;
  /** Takes a leased render's guard decisions once it ended, for the audit trail (off the request's path). */
  egressAudit?: EgressAuditSink;
}

/** Where a leased render's guard decisions go: its lease, the decisions, and how many the guard counted past its bound. */
export type EgressAuditSink = (lease: string, entries: EgressAuditEntry[], dropped: number) => void;

/** How often the pool looks at Chromium's memory and retries a failed self-test, and the self-test's budget. */
export interface PoolTimings {
  /** Between two looks at the browser's resident memory (default 5000). */
  memoryCheckMs?: number;
  /** Between a failed self-test and the next try (default 5000). */
  selfTestRetryMs?: number;
  /** The self-test render's whole budget (default 20000). */
  selfTestBudgetMs?: number;
}
