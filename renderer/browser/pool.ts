/**
 * The Chromium pool (docs/architecture.md §1, §6): a bounded number of render slots
 * on one warm browser, a fresh context per render prepared ahead, every context proxied
 * through its lane relay to the guard, and a supervisor that replaces the browser after N
 * renders, past a memory bound, or when it crashes. Nothing renders until the self-test passed.
 */
import os from 'node:os';
import { SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import puppeteer from 'puppeteer-core';
import { addTally, emptyTally, type RenderTally } from '../../lib/guard-contract.ts';
import { ServiceError } from '../../lib/errors.ts';
import type { Logger } from '../../lib/log.ts';
import type { Counter } from '../../lib/metrics.ts';
import { BUSY_MEAN_WINDOW_MS, type GuardState } from '../../lib/state-contract.ts';
import { DEFAULT_CHROMIUM_UID } from '../../lib/config.ts';
import { chromiumArgs, chromiumExecutable, isHeadlessShell } from './chromium.ts';
import { chromiumEnvironment } from './chromium-env.ts';
import { JAIL_HOME, JAIL_PROFILE_DIR, type JailUser } from './chromium-jail.ts';
import { chromiumSandbox, type SandboxVerdict } from './sandbox-support.ts';
import { startGuardBridge, type GuardBridge } from './guard-bridge.ts';
import { dialGuard, guardAddress, tallyReader, type GuardAddress } from './guard-endpoint.ts';
import { BusyWindow } from './busy-window.ts';
import { BrowserInstance, INSTANCE_GONE, withTimeout, type Lane } from './instance.ts';
import { prepareNetnsLaunch, type NetnsLaunch } from './netns-launcher.ts';
import { killTree, treeMemoryBytes } from './process-tree.ts';
import type { RelaySet } from './relay-set.ts';
import { startRelays } from './relay-set.ts';
import { runSelfTest } from './self-test.ts';
import type { BrowserPool, BrowserPoolOptions, LaunchBrowser, PoolStats, RenderJob, RenderResult } from './types.ts';

/** Lanes (prepared contexts) per slot: one rendering, one ready for the slot's next render. */
const LANES_PER_SLOT = 2;
const LAUNCH_TIMEOUT_MS = 30_000;
const BROWSER_CLOSE_TIMEOUT_MS = 5_000;
const MEMORY_CHECK_MS = 5_000;
const SELF_TEST_RETRY_MS = 5_000;
const SELF_TEST_BUDGET_MS = 20_000;
const RELAUNCH_BACKOFF_MS = [250, 1_000, 5_000, 15_000];
const STOP_DRAIN_MS = 10_000;
/** How long a page that failed its render has to prove it is still alive. */
const PROBE_TIMEOUT_MS = 2_000;

const tracer = trace.getTracer('tintype');

/** Creates a pool; call start() before render(). */
export function createBrowserPool(options: BrowserPoolOptions): BrowserPool {
  return new Pool(options);
}

function runningAsRoot(): boolean {
  return process.getuid?.() === 0;
}

function abortError(): Error {
  return new DOMException('the client went away', 'AbortError');
}

/** Settles like `promise`, or rejects with the signal's reason as soon as it aborts. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (v) => (signal.removeEventListener('abort', onAbort), resolve(v)),
      (e: unknown) => (signal.removeEventListener('abort', onAbort), reject(e)),
    );
  });
}

/** Marks a span failed with the error's code only, as renderer/operations/telemetry.ts does. */
function failSpan(span: Span, err: unknown): void {
  const code = err instanceof ServiceError ? err.code : 'internal';
  span.setAttribute('error.code', code);
  span.setStatus({ code: SpanStatusCode.ERROR, message: code });
}

class Pool implements BrowserPool {
  private readonly config: BrowserPoolOptions['config'];
  private readonly logger: Logger;
  private readonly launchBrowser: LaunchBrowser;
  private readonly lanes: number;
  private readonly restartsCounter: Counter | undefined;
  private readonly userNamespace: boolean;
  private readonly jailUser: JailUser;
  /** Whether Chromium's own sandbox can run here; decided at start. */
  private sandbox: SandboxVerdict = { on: false, why: 'not started' };

  private executable = '';
  private guard: GuardAddress | undefined;
  private readTally: ((token: string) => Promise<RenderTally>) | undefined;
  private bridge: GuardBridge | undefined;

  private current: BrowserInstance | undefined;
  private launching: Promise<BrowserInstance> | undefined;
  private readonly live = new Set<BrowserInstance>();
  private generation = 0;
  private launchFailures = 0;

  private busy = 0;
  /** The busy count over time, for `/state`'s busyMean. */
  private readonly busyWindow = new BusyWindow(BUSY_MEAN_WINDOW_MS, performance.now());
  private renders = 0;
  private restarts = 0;
  private verified = false;
  /** The self-test has passed at least once: a guard not verified now was lost, not yet unproven. */
  private everVerified = false;
  private started = false;
  private stopped = false;
  private lastMemoryBytes = 0;
  /** True while a memory check reads /proc; a tick that finds one running is skipped. */
  private checkingMemory = false;
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly stopping = new AbortController();

  constructor(private readonly options: BrowserPoolOptions) {
    this.config = options.config;
    this.logger = options.logger.child({ component: 'browser' });
    this.launchBrowser = options.launch ?? ((o) => puppeteer.launch(o));
    this.lanes = this.config.slots * LANES_PER_SLOT;
    this.userNamespace = options.netnsUserNamespace ?? !runningAsRoot();
    const uid = this.config.chromiumUid ?? DEFAULT_CHROMIUM_UID;
    this.jailUser = { kind: this.userNamespace ? 'nested' : 'uid', uid, gid: uid };
    const registry = options.registry;
    if (registry !== undefined) {
      registry.gauge('tintype_render_slots', 'Render slots of this renderer.').set(this.config.slots);
      const busyGauge = registry.gauge('tintype_render_slots_busy', 'Render slots in use.');
      busyGauge.collect(() => busyGauge.set(this.busy));
      const rss = registry.gauge('tintype_browser_memory_bytes', "Memory of Chromium's processes (sum of proportional set sizes).");
      rss.collect(() => rss.set(this.lastMemoryBytes));
      const verified = registry.gauge('tintype_guard_verified', '1 while the self-test has passed and the guard answers; 0 before, and after the guard was lost until it passes again.');
      verified.collect(() => verified.set(this.verified ? 1 : 0));
      this.restartsCounter = registry.counter('tintype_browser_restarts_total', 'Chromium restarts by reason.');
    }
  }

  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    // In pod isolation Chromium shares this process's PID namespace. As PID 1 (a container with
    // no init) this process inherits the children of a Chromium that was killed or crashed, and
    // Node never waits for processes it did not start: they would stay zombies.
    if (this.config.isolation === 'pod' && process.pid === 1) {
      this.logger.warn('browser.no_init', { detail: 'running as PID 1: run the renderer under an init that reaps orphans (tini)' });
    }
    this.executable = chromiumExecutable(this.config);
    this.sandbox = chromiumSandbox({
      isolation: this.config.isolation,
      // The probe runs as the user Chromium becomes: in netns, its own uid when the renderer is root.
      asRoot: this.config.isolation === 'netns' ? !this.userNamespace : runningAsRoot(),
      chromiumUid: this.jailUser.uid,
    });
    if (!this.sandbox.on) this.logger.warn('browser.sandbox_off', { detail: this.sandbox.why });
    if (this.config.isolation === 'netns' && this.userNamespace) {
      this.logger.warn('browser.shared_uid', {
        detail: "the renderer is not root: Chromium runs as the renderer's own uid (in user namespaces of its own), not as a uid of its own",
      });
    }
    const endpoint = this.options.guard;
    if (this.config.isolation === 'netns' && endpoint.socketPath === undefined && endpoint.url !== undefined) {
      // Only a unix socket crosses the namespace: bridge one to the guard's TCP address.
      const tcp = guardAddress(endpoint, 'pod');
      this.bridge = await startGuardBridge(tcp);
      this.guard = { path: this.bridge.path };
      this.readTally = tallyReader(endpoint, tcp);
    } else {
      this.guard = guardAddress(endpoint, this.config.isolation);
      this.readTally = tallyReader(endpoint, this.guard);
    }
    await this.relaunch();
    this.every(this.options.timings?.memoryCheckMs ?? MEMORY_CHECK_MS, () => void this.checkMemory());
    await this.verify();
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    // The self-test's render has no client waiting for it: end it now rather than drain it.
    this.stopping.abort(new Error('the pool is stopping'));
    for (const t of this.timers) clearInterval(t);
    this.timers.clear();
    const deadline = Date.now() + STOP_DRAIN_MS;
    while (this.busy > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    await this.launching?.catch(() => undefined);
    await Promise.all([...this.live].map((inst) => this.closeInstance(inst)));
    await this.bridge?.close();
  }

  healthy(): boolean {
    return this.started && !this.stopped && (this.current !== undefined || this.launching !== undefined);
  }

  selfTestPassed(): boolean {
    return this.verified;
  }

  guardState(): GuardState {
    return this.verified ? 'verified' : this.everVerified ? 'lost' : 'unverified';
  }

  stats(): PoolStats {
    return {
      slots: this.config.slots,
      busy: this.busy,
      busyMean: this.busyWindow.mean(performance.now()),
      renders: this.renders,
      restarts: this.restarts,
      browserMemoryBytes: this.lastMemoryBytes,
      readyContexts: this.current?.readyLanes() ?? 0,
    };
  }

  render<T>(job: RenderJob<T>): Promise<RenderResult<T>> {
    if (!this.verified) return Promise.reject(new ServiceError('guard_unverified'));
    return this.renderOnSlot(job);
  }

  /** The render path itself, also used by the self-test before the pool is verified. */
  private async renderOnSlot<T>(job: RenderJob<T>): Promise<RenderResult<T>> {
    if (this.stopped || !this.started || this.busy >= this.config.slots) throw new ServiceError('busy');
    this.busy += 1;
    this.busyWindow.set(this.busy, performance.now());
    const control = new AbortController();
    const timer = setTimeout(() => control.abort(new ServiceError('render_timeout')), Math.max(0, job.deadline - Date.now()));
    const onClientGone = (): void => control.abort(job.signal?.reason ?? abortError());
    if (job.signal?.aborted) onClientGone();
    job.signal?.addEventListener('abort', onClientGone, { once: true });
    let inst: BrowserInstance | undefined;
    let lane: Lane | undefined;
    let cancelDeathHook = (): void => {};
    // README "Telemetry": `browser.context`, a child of the active `render` span, from asking for the
    // render's context to its close. Not made active: navigate/capture stay children of render.
    const contextSpan = tracer.startSpan('browser.context');
    try {
      ({ inst, lane } = await this.acquire(control.signal, contextSpan));
      const instance = inst;
      const page = lane.page!;
      const cancelBrowserHook = inst.onDeath(() => control.abort(new ServiceError('render_failed')));
      // The page's renderer process crashed (or the page closed itself): nothing more will come.
      const onPageGone = (): void => control.abort(new ServiceError('render_failed'));
      page.once('error', onPageGone);
      page.once('close', onPageGone);
      cancelDeathHook = () => {
        cancelBrowserHook();
        page.off('error', onPageGone);
        page.off('close', onPageGone);
      };
      // The lane's relay already names this render (set while the lane was prepared).
      const token = lane.token;
      if (token === undefined) throw new ServiceError('render_failed');
      const total = emptyTally();
      // Set when the guard could not be asked for this render's count: then nothing can tell
      // what the render reached, and the pool no longer knows its walls hold.
      let guardLost = false;
      const tally = async (): Promise<RenderTally> => {
        let part: RenderTally;
        try {
          part = await this.readTally!(token);
        } catch (err) {
          guardLost = true;
          this.lostGuard(err);
          throw err;
        }
        addTally(total, part);
        return { ...total, refused: [...total.refused] };
      };
      const work = job.run({ page, signal: control.signal, tally });
      work.catch(() => {}); // once aborted, the page's calls reject on their own
      const value = await untilAborted(work, control.signal).catch(async (err: unknown) => {
        if (control.signal.aborted) throw err;
        // A target the render could not reach while the guard was gone is our failure, not the target's.
        if (guardLost) throw new ServiceError('guard_unverified');
        if (err instanceof ServiceError) throw err;
        // A failed navigation can be the first sign of a crashed renderer, ahead of the crash
        // event: a page that no longer answers is a failed render (spec Part 7 render_failed).
        const alive = await untilAborted(
          withTimeout(page.evaluate('1'), PROBE_TIMEOUT_MS).then(
            () => true,
            () => false,
          ),
          control.signal,
        );
        if (!alive) throw new ServiceError('render_failed');
        throw err;
      });
      // Cut the lane before the final count, so nothing more is counted for this render.
      const armed = lane;
      await untilAborted(
        instance.relays.setToken(lane.index, undefined).then(() => {
          armed.token = undefined;
        }),
        control.signal,
      );
      let final: RenderTally;
      try {
        final = await untilAborted(tally(), control.signal);
      } catch (err) {
        if (control.signal.aborted) throw err;
        throw new ServiceError('guard_unverified');
      }
      return { value, tally: final };
    } catch (err) {
      if (control.signal.aborted) throw control.signal.reason;
      if (err === INSTANCE_GONE) throw new ServiceError('render_failed');
      throw err;
    } finally {
      clearTimeout(timer);
      job.signal?.removeEventListener('abort', onClientGone);
      cancelDeathHook();
      this.busy -= 1;
      this.busyWindow.set(this.busy, performance.now());
      if (inst !== undefined && lane !== undefined) {
        this.endRender(inst, lane, contextSpan);
      } else {
        failSpan(contextSpan, control.signal.aborted ? control.signal.reason : new ServiceError('render_failed'));
        contextSpan.end();
      }
    }
  }

  /**
   * Waits (inside the render's budget) for the current browser and one of its prepared lanes.
   * `span` learns whether the lane was ready when asked (`tintype.prepared`) or had to be made
   * first. (The wait itself is the operations' `slot.wait` span, which starts before this.)
   */
  private async acquire(signal: AbortSignal, span: Span): Promise<{ inst: BrowserInstance; lane: Lane }> {
    for (;;) {
      signal.throwIfAborted();
      let inst = this.current;
      if (inst === undefined) {
        try {
          inst = await untilAborted(this.relaunch(), signal);
        } catch (err) {
          if (signal.aborted) throw err;
          throw new ServiceError('render_failed');
        }
      }
      try {
        const prepared = inst.readyLanes() > 0;
        const lane = await inst.take(signal);
        span.setAttributes({ 'tintype.prepared': prepared, 'tintype.browser.generation': inst.generation });
        inst.inFlight += 1;
        inst.renders += 1;
        this.renders += 1;
        if (inst.renders >= this.config.recycleAfterRenders) this.replace(inst, 'recycle');
        return { inst, lane };
      } catch (err) {
        if (err !== INSTANCE_GONE) throw err;
      }
    }
  }

  /**
   * After a render, in the background: the lane's connections are cut, its context closed and a
   * fresh one prepared; the render's `browser.context` span ends once the context is closed.
   */
  private endRender(inst: BrowserInstance, lane: Lane, span: Span): void {
    void (async () => {
      // A render that ended before its own cut (failure, timeout, client gone) is cut here.
      if (!inst.dead && lane.token !== undefined) {
        await inst.relays.setToken(lane.index, undefined).then(
          () => (lane.token = undefined),
          () => {},
        );
      }
      const closed = await inst.release(lane);
      span.setAttribute('tintype.context_closed', closed);
      if (!closed) failSpan(span, new ServiceError('render_failed'));
    })().finally(() => {
      span.end();
      inst.renderEnded();
    });
  }

  /** Launches a browser (once at a time) and makes it current. */
  private relaunch(): Promise<BrowserInstance> {
    if (this.launching !== undefined) return this.launching;
    const launching = this.launchInstance().then(
      (inst) => {
        this.launching = undefined;
        this.launchFailures = 0;
        if (this.stopped) {
          void this.closeInstance(inst);
          throw new ServiceError('busy');
        }
        const previous = this.current;
        this.current = inst;
        if (previous !== undefined && previous !== inst) this.retireInstance(previous);
        return inst;
      },
      (err: unknown) => {
        this.launching = undefined;
        this.launchFailures += 1;
        this.logger.error('browser.launch_failed', { detail: (err as Error).message, failures: this.launchFailures });
        if (!this.stopped && this.current === undefined) {
          const delay = RELAUNCH_BACKOFF_MS[Math.min(this.launchFailures - 1, RELAUNCH_BACKOFF_MS.length - 1)]!;
          this.after(delay, () => void this.relaunch().catch(() => {}));
        }
        throw err;
      },
    );
    this.launching = launching;
    return launching;
  }

  private async launchInstance(): Promise<BrowserInstance> {
    const generation = ++this.generation;
    let netns: NetnsLaunch | undefined;
    let relays: RelaySet;
    let refuseProxy: string;
    let executablePath = this.executable;
    if (this.config.isolation === 'netns') {
      netns = await prepareNetnsLaunch({
        chromiumPath: this.executable,
        lanes: this.lanes,
        guard: this.guard!,
        logger: this.logger,
        userNamespace: this.userNamespace,
        user: this.jailUser,
      });
      executablePath = netns.executablePath;
      refuseProxy = netns.refuseAddress;
    } else {
      // Relays of its own per browser (as in netns): a lane's token belongs to one browser's
      // context, so a replacement preparing its lanes never renames an old browser's render.
      const guard = this.guard!;
      relays = await startRelays({ lanes: this.lanes, dial: () => dialGuard(guard) });
      refuseProxy = relays.refuseAddress;
    }
    let browser;
    try {
      browser = await this.launchBrowser({
        executablePath,
        pipe: true,
        headless: isHeadlessShell(this.executable) ? 'shell' : true,
        args: chromiumArgs({ refuseProxy, noSandbox: !this.sandbox.on }),
        // Nothing of the renderer's environment: its variables name its databases and secrets.
        env: chromiumEnvironment(process.env, netns !== undefined ? JAIL_HOME : os.tmpdir()),
        // In netns the profile is in the jail's own /tmp, in memory, gone with the namespace.
        ...(netns !== undefined ? { userDataDir: JAIL_PROFILE_DIR } : {}),
        defaultViewport: null,
        handleSIGINT: false,
        handleSIGTERM: false,
        handleSIGHUP: false,
        timeout: LAUNCH_TIMEOUT_MS,
      });
    } catch (err) {
      await netns?.dispose();
      if (netns === undefined) await relays!.close().catch(() => undefined);
      throw err;
    }
    const pid = browser.process()?.pid ?? 0;
    if (netns !== undefined) {
      try {
        relays = await netns.relays;
      } catch (err) {
        if (pid > 0) killTree(pid);
        await netns.dispose();
        throw err;
      }
    }
    const inst = new BrowserInstance(generation, browser, pid, relays!, this.logger, (reason) =>
      this.onLost(inst, reason),
    );
    const disposeNetns = netns;
    if (disposeNetns !== undefined) {
      void browser.process()?.once('exit', () => void disposeNetns.dispose());
      void relays!.lost.then(() => this.onLost(inst, 'relay_lost'));
    }
    browser.on('disconnected', () => this.onLost(inst, 'crash'));
    this.live.add(inst);
    inst.prepareAll();
    this.logger.info('browser.started', { generation, isolation: this.config.isolation, lanes: this.lanes });
    return inst;
  }

  /** The browser died or became untrustworthy: fail its renders now, reap it, replace it. */
  private onLost(inst: BrowserInstance, reason: string): void {
    if (inst.dead) return;
    inst.markDead();
    this.live.delete(inst);
    if (inst.pid > 0) killTree(inst.pid);
    void inst.relays.close().catch(() => {});
    if (inst.closing) return;
    this.logger.warn('browser.lost', { generation: inst.generation, reason });
    this.countRestart(reason);
    if (this.current === inst) {
      this.current = undefined;
      if (!this.stopped) void this.relaunch().catch(() => {});
    }
  }

  /** Orders a replacement; the old browser serves until the new one is up, then drains and closes. */
  private replace(inst: BrowserInstance, reason: 'recycle' | 'memory'): void {
    if (inst.replacing || inst.dead || this.stopped) return;
    inst.replacing = true;
    this.logger.info('browser.replacing', { generation: inst.generation, reason, renders: inst.renders });
    this.countRestart(reason);
    void this.relaunch().catch(() => {
      inst.replacing = false; // try again on the next trigger
    });
  }

  private retireInstance(inst: BrowserInstance): void {
    inst.retire();
    void inst.idle().then(() => this.closeInstance(inst));
  }

  private async closeInstance(inst: BrowserInstance): Promise<void> {
    if (inst.closing) return;
    inst.closing = true;
    inst.retire();
    this.live.delete(inst);
    if (this.current === inst) this.current = undefined;
    await withTimeout(inst.browser.close(), BROWSER_CLOSE_TIMEOUT_MS).catch(() => undefined);
    if (inst.pid > 0) killTree(inst.pid);
    inst.markDead();
    await inst.relays.close().catch(() => undefined);
  }

  private countRestart(reason: string): void {
    this.restarts += 1;
    this.restartsCounter?.inc({ reason });
  }

  private async checkMemory(): Promise<void> {
    const inst = this.current;
    if (this.checkingMemory || inst === undefined || inst.pid <= 0 || inst.dead) return;
    // One check at a time: under load a walk of /proc can outlast the interval.
    this.checkingMemory = true;
    try {
      this.lastMemoryBytes = await treeMemoryBytes(inst.pid);
    } catch {
      return; // /proc unreadable this time; the next tick tries again
    } finally {
      this.checkingMemory = false;
    }
    if (this.stopped || inst.dead) return;
    if (this.lastMemoryBytes > this.config.browserMaxRssMb * 1024 * 1024) {
      this.logger.warn('browser.memory_bound', { generation: inst.generation, rssMb: Math.round(this.lastMemoryBytes / 1048576) });
      this.replace(inst, 'memory');
    }
  }

  /**
   * The guard stopped answering after the self-test had passed (its process or pod is gone): the
   * walls are no longer proven, so the pool takes no render (503 `guard_unverified`, not
   * metered, and readiness fails) until the self-test passes again (README, "Start-up self-test").
   */
  private lostGuard(err: unknown): void {
    if (!this.verified || this.stopped) return;
    this.verified = false;
    this.logger.error('guard.lost', { detail: (err as Error).message });
    void this.verify();
  }

  /** Runs the self-test until it passes (spec Part 7 `guard_unverified` until then). */
  private async verify(): Promise<void> {
    if (this.stopped || this.verified) return;
    const report = await runSelfTest({
      render: (job) => this.renderOnSlot(job),
      budgetMs: this.options.timings?.selfTestBudgetMs ?? SELF_TEST_BUDGET_MS,
      signal: this.stopping.signal,
      allowCidrs: this.config.guardAllowCidrs,
    });
    if (this.stopped) return;
    if (report.passed) {
      this.verified = true;
      this.everVerified = true;
      this.logger.info('guard.self_test_passed', { blocked: report.blocked });
      return;
    }
    this.logger.error('guard.self_test_failed', {
      detail: report.failure,
      canaryConnections: report.canaryConnections,
      blocked: report.blocked,
    });
    this.after(this.options.timings?.selfTestRetryMs ?? SELF_TEST_RETRY_MS, () => void this.verify());
  }

  private every(ms: number, fn: () => void): void {
    const t = setInterval(fn, ms);
    t.unref();
    this.timers.add(t);
  }

  private after(ms: number, fn: () => void): void {
    const t = setTimeout(() => {
      this.timers.delete(t);
      fn();
    }, ms);
    t.unref();
    this.timers.add(t);
  }
}
