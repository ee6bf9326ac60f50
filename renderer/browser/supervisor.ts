/**
 * The browser supervisor (docs/operations.md, "Slots and supervision"; docs/architecture.md §6): one current
 * Chromium, launched behind the isolation's walls; replaced after `TINTYPE_RECYCLE_AFTER_RENDERS`
 * renders or past `TINTYPE_BROWSER_MAX_RSS_MB` (the replacement launched while the old one
 * drains), and replaced at once when it crashes, with back-off when a launch fails. A browser
 * that is gone fails its renders at once and its process tree is killed: no zombie is left.
 */
import { ServiceError } from '../../lib/errors.ts';
import type { Logger } from '../../lib/log.ts';
import type { Counter } from '../../lib/metrics.ts';
import { untilAborted, withTimeout } from './bounded-wait.ts';
import { BrowserInstance, INSTANCE_GONE, type HeldLane } from './instance.ts';
import type { BrowserIsolation } from './isolation.ts';
import { killTree, treeMemoryBytes } from './process-tree.ts';
import { Timers } from './timers.ts';

const BROWSER_CLOSE_TIMEOUT_MS = 5_000;
const MEMORY_CHECK_MS = 5_000;
const RELAUNCH_BACKOFF_MS = [250, 1_000, 5_000, 15_000];

/** What the supervisor is told. */
export interface SupervisorOptions {
  isolation: BrowserIsolation;
  /** Prepared contexts per browser. */
  lanes: number;
  recycleAfterRenders: number;
  browserMaxRssMb: number;
  logger: Logger;
  /** Makes a render token the guard accepts (its GuardEndpoint's tokens, lib/render-token.ts). */
  mintToken: () => string;
  /** `tintype_browser_restarts_total`, by reason. */
  restarts?: Counter;
  memoryCheckMs?: number;
}

/** Counters of the supervisor, for the pool's stats. */
export interface SupervisorCounts {
  renders: number;
  restarts: number;
  browserMemoryBytes: number;
  readyContexts: number;
}

export class Supervisor {
  private current: BrowserInstance | undefined;
  private launching: Promise<BrowserInstance> | undefined;
  private readonly live = new Set<BrowserInstance>();
  private generation = 0;
  private launchFailures = 0;
  private renders = 0;
  private restarts = 0;
  private lastMemoryBytes = 0;
  /** True while a memory check reads /proc; a tick that finds one running is skipped. */
  private checkingMemory = false;
  private halted = false;
  private readonly timers = new Timers();
  /** Browsers whose memory is reported from where they run (pod isolation: the browser container). */
  private readonly reportedMemory = new WeakMap<BrowserInstance, () => number>();

  constructor(private readonly options: SupervisorOptions) {}

  /** Launches the first browser and starts looking at its memory. */
  async start(): Promise<void> {
    await this.relaunch();
    this.timers.every(this.options.memoryCheckMs ?? MEMORY_CHECK_MS, () => void this.checkMemory());
  }

  /** No more launches or replacements; the browsers serve the renders in flight. */
  halt(): void {
    this.halted = true;
    this.timers.clear();
  }

  /** Closes every browser (after halt() and the renders' drain). */
  async close(): Promise<void> {
    await this.launching?.catch(() => undefined);
    await Promise.all([...this.live].map((inst) => this.closeInstance(inst)));
  }

  /** A browser is up or on its way. */
  up(): boolean {
    return this.current !== undefined || this.launching !== undefined;
  }

  counts(): SupervisorCounts {
    return {
      renders: this.renders,
      restarts: this.restarts,
      browserMemoryBytes: this.lastMemoryBytes,
      readyContexts: this.current?.readyLanes() ?? 0,
    };
  }

  /**
   * Waits (until `signal` aborts) for the current browser and one of its prepared lanes, launching
   * a browser when none is up. A render taking the last of a browser's N renders orders its
   * replacement. Rejects with ServiceError('render_failed') when no browser can be launched.
   */
  async acquire(signal: AbortSignal): Promise<HeldLane> {
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
        inst.inFlight += 1;
        inst.renders += 1;
        this.renders += 1;
        if (inst.renders >= this.options.recycleAfterRenders) this.replace(inst, 'recycle');
        return { instance: inst, lane, prepared };
      } catch (err) {
        if (err !== INSTANCE_GONE) throw err;
      }
    }
  }

  /** Launches a browser (once at a time) and makes it current. */
  private relaunch(): Promise<BrowserInstance> {
    if (this.launching !== undefined) return this.launching;
    const launching = this.launchInstance().then(
      (inst) => {
        this.launching = undefined;
        this.launchFailures = 0;
        if (this.halted) {
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
        this.options.logger.error('browser.launch_failed', { detail: (err as Error).message, failures: this.launchFailures });
        if (!this.halted && this.current === undefined) {
          const delay = RELAUNCH_BACKOFF_MS[Math.min(this.launchFailures - 1, RELAUNCH_BACKOFF_MS.length - 1)]!;
          this.timers.after(delay, () => void this.relaunch().catch(() => {}));
        }
        throw err;
      },
    );
    this.launching = launching;
    return launching;
  }

  private async launchInstance(): Promise<BrowserInstance> {
    const generation = ++this.generation;
    const launched = await this.options.isolation.launch();
    const { browser, relays } = launched;
    const pid = launched.pid ?? browser.process()?.pid ?? 0;
    const inst = new BrowserInstance(generation, browser, pid, relays, this.options.logger, (reason) => this.onLost(inst, reason), this.options.mintToken);
    if (launched.memoryBytes !== undefined) this.reportedMemory.set(inst, launched.memoryBytes);
    // Relays that stop working (their process died) leave the browser unable to reach anything.
    void relays.lost.then(() => this.onLost(inst, 'relay_lost'));
    browser.on('disconnected', () => this.onLost(inst, 'crash'));
    this.live.add(inst);
    inst.prepareAll();
    this.options.logger.info('browser.started', { generation, isolation: this.options.isolation.mode, lanes: this.options.lanes });
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
    this.options.logger.warn('browser.lost', { generation: inst.generation, reason });
    this.countRestart(reason);
    if (this.current === inst) {
      this.current = undefined;
      if (!this.halted) void this.relaunch().catch(() => {});
    }
  }

  /** Orders a replacement; the old browser serves until the new one is up, then drains and closes. */
  private replace(inst: BrowserInstance, reason: 'recycle' | 'memory'): void {
    if (inst.replacing || inst.dead || this.halted) return;
    inst.replacing = true;
    this.options.logger.info('browser.replacing', { generation: inst.generation, reason, renders: inst.renders });
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
    this.options.restarts?.inc({ reason });
  }

  private async checkMemory(): Promise<void> {
    const inst = this.current;
    if (this.checkingMemory || inst === undefined || inst.dead) return;
    const reported = this.reportedMemory.get(inst);
    if (reported === undefined && inst.pid <= 0) return;
    // One check at a time: under load a walk of /proc can outlast the interval.
    this.checkingMemory = true;
    try {
      this.lastMemoryBytes = reported !== undefined ? reported() : await treeMemoryBytes(inst.pid);
    } catch {
      return; // /proc unreadable this time; the next tick tries again
    } finally {
      this.checkingMemory = false;
    }
    if (this.halted || inst.dead) return;
    if (this.lastMemoryBytes > this.options.browserMaxRssMb * 1024 * 1024) {
      this.options.logger.warn('browser.memory_bound', { generation: inst.generation, rssMb: Math.round(this.lastMemoryBytes / 1048576) });
      this.replace(inst, 'memory');
    }
  }
}
