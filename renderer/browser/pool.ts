/**
 * The Chromium pool (docs/operations.md, "Slots and supervision"; docs/architecture.md §3): a bounded number
 * of render slots (503 `busy` at once when all are taken, no queue) on the supervisor's current
 * browser, behind the isolation's walls. A render takes a prepared page, runs its work and gives
 * the page back; its scope bounds and cleans up the rest. Nothing renders until the self-test passed.
 */
import puppeteer from 'puppeteer-core';
import { ServiceError } from '../../lib/errors.ts';
import type { Counter } from '../../lib/metrics.ts';
import { BUSY_MEAN_WINDOW_MS, type GuardState } from '../../lib/state-contract.ts';
import { BusyWindow } from './busy-window.ts';
import type { HeldLane } from './instance.ts';
import type { BrowserIsolation, IsolationOptions } from './isolation.ts';
import { createNetnsIsolation } from './netns-isolation.ts';
import { createPodIsolation } from './pod-isolation.ts';
import { RenderScope, type TallySource } from './render-scope.ts';
import { Supervisor } from './supervisor.ts';
import type { BrowserPool, BrowserPoolOptions, PoolStats, RenderJob, RenderResult } from './types.ts';
import { Verification } from './verification.ts';

/** Lanes (prepared contexts) per slot: one rendering, the others ready or being prepared (docs/architecture.md §3). */
const LANES_PER_SLOT = 3;
/** How long stop() lets the renders in flight finish. */
const STOP_DRAIN_MS = 10_000;

/** Creates a pool; call start() before render(). */
export function createBrowserPool(options: BrowserPoolOptions): BrowserPool {
  return new Pool(options);
}

/** The isolation `TINTYPE_ISOLATION` names. */
function chooseIsolation(options: BrowserPoolOptions, common: IsolationOptions): BrowserIsolation {
  if (options.config.isolation === 'pod') return createPodIsolation(common);
  return createNetnsIsolation({
    ...common,
    ...(options.netnsUserNamespace === undefined ? {} : { userNamespace: options.netnsUserNamespace }),
  });
}

class Pool implements BrowserPool {
  private readonly slots: number;
  private readonly isolation: BrowserIsolation;
  private readonly supervisor: Supervisor;
  private readonly verification: Verification;
  private readonly tallies: TallySource;
  /** Renders by whether they found a prepared context (`tintype_render_contexts_total`). */
  private readonly contexts: Counter | undefined;
  private busy = 0;
  /** The busy count over time, for `/state`'s busyMean. */
  private readonly busyWindow = new BusyWindow(BUSY_MEAN_WINDOW_MS, performance.now());
  private started = false;
  private stopped = false;

  constructor(options: BrowserPoolOptions) {
    const { config, registry, timings } = options;
    const logger = options.logger.child({ component: 'browser' });
    const lanes = config.slots * LANES_PER_SLOT;
    this.slots = config.slots;
    this.isolation = chooseIsolation(options, {
      config,
      guard: options.guard,
      ...(options.guardLookup === undefined ? {} : { guardLookup: options.guardLookup }),
      logger,
      launchBrowser: options.launch ?? ((o) => puppeteer.launch(o)),
      lanes,
    });
    const restarts = registry?.counter('tintype_browser_restarts_total', 'Chromium restarts by reason.');
    this.supervisor = new Supervisor({
      isolation: this.isolation,
      lanes,
      recycleAfterRenders: config.recycleAfterRenders,
      browserMaxRssMb: config.browserMaxRssMb,
      logger,
      mintToken: () => options.guard.tokens.mint(),
      ...(restarts === undefined ? {} : { restarts }),
      ...(timings?.memoryCheckMs === undefined ? {} : { memoryCheckMs: timings.memoryCheckMs }),
    });
    this.verification = new Verification({
      render: (job) => this.renderOnSlot(job),
      allowCidrs: config.guardAllowCidrs,
      logger,
      ...(timings?.selfTestRetryMs === undefined ? {} : { retryMs: timings.selfTestRetryMs }),
      ...(timings?.selfTestBudgetMs === undefined ? {} : { budgetMs: timings.selfTestBudgetMs }),
    });
    this.tallies = {
      read: (token) => this.isolation.readTally(token),
      lost: (err) => this.verification.lost(err),
      open: (token, lease) => this.isolation.openRender(token, lease),
      ...(options.egressAudit === undefined ? {} : { audit: options.egressAudit }),
    };
    this.contexts = registry?.counter('tintype_render_contexts_total', 'Renders by whether a prepared context was ready for them (prepared="true") or had to be made on their clock.');
    if (registry !== undefined) {
      registry.gauge('tintype_render_slots', 'Render slots of this renderer.').set(this.slots);
      const busyGauge = registry.gauge('tintype_render_slots_busy', 'Render slots in use.');
      busyGauge.collect(() => busyGauge.set(this.busy));
      const rss = registry.gauge('tintype_browser_memory_bytes', "Memory of Chromium's processes (sum of proportional set sizes).");
      rss.collect(() => rss.set(this.supervisor.counts().browserMemoryBytes));
      const sandbox = registry.gauge('tintype_browser_sandbox', "1 while Chromium runs with its own sandbox; 0 when it runs with --no-sandbox (the start-up log says why).");
      sandbox.collect(() => sandbox.set(this.isolation.sandboxOn() ? 1 : 0));
      const verified = registry.gauge('tintype_guard_verified', '1 while the self-test has passed and the guard answers; 0 before, and after the guard was lost until it passes again.');
      verified.collect(() => verified.set(this.verification.passed() ? 1 : 0));
    }
  }

  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    await this.isolation.start();
    await this.supervisor.start();
    await this.verification.run();
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.verification.stop();
    this.supervisor.halt();
    const deadline = Date.now() + STOP_DRAIN_MS;
    while (this.busy > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    await this.supervisor.close();
    await this.isolation.stop();
  }

  healthy(): boolean {
    return this.started && !this.stopped && this.supervisor.up();
  }

  selfTestPassed(): boolean {
    return this.verification.passed();
  }

  guardState(): GuardState {
    return this.verification.state();
  }

  stats(): PoolStats {
    return {
      slots: this.slots,
      busy: this.busy,
      busyMean: this.busyWindow.mean(performance.now()),
      ...this.supervisor.counts(),
      sandbox: this.isolation.sandboxOn(),
    };
  }

  render<T>(job: RenderJob<T>): Promise<RenderResult<T>> {
    if (!this.verification.passed()) return Promise.reject(new ServiceError('guard_unverified'));
    return this.renderOnSlot(job);
  }

  /** The render path itself, also used by the self-test before the pool is verified. */
  private async renderOnSlot<T>(job: RenderJob<T>): Promise<RenderResult<T>> {
    if (this.stopped || !this.started || this.busy >= this.slots) throw new ServiceError('busy');
    this.busy += 1;
    this.busyWindow.set(this.busy, performance.now());
    const scope = new RenderScope(job, this.tallies);
    let held: HeldLane | undefined;
    try {
      held = await this.supervisor.acquire(scope.signal);
      this.contexts?.inc({ prepared: String(held.prepared) });
      const page = scope.enter(held);
      await scope.open(job.lease);
      const value = await scope.run(job.run, page);
      // Cut the lane before the final count, so nothing more is counted for this render.
      await scope.bound(held.instance.cut(held.lane));
      return { value, tally: await scope.finalTally() };
    } catch (err) {
      throw scope.failure(err);
    } finally {
      this.busy -= 1;
      this.busyWindow.set(this.busy, performance.now());
      scope.end(held);
    }
  }
}
