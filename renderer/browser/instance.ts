/**
 * One running Chromium with its relays and its lanes. A lane is a browser context (with one
 * blank tab, prepared-page.ts) prepared ahead of time against one lane relay, so a render never
 * waits for a context to be created; each lane serves exactly one render and is then closed and
 * prepared afresh (spec Part 1 rule 5: nothing survives a render; docs/architecture.md §3).
 */
import type { Browser, BrowserContext, CDPSession } from 'puppeteer-core';
import type { Logger } from '../../lib/log.ts';
import { withTimeout } from './bounded-wait.ts';
import { contextOptions } from './chromium.ts';
import { PreparedPage } from './prepared-page.ts';
import type { RelaySet } from './relay-set.ts';

/** A prepared browser context bound to one lane relay. */
export interface Lane {
  readonly index: number;
  readonly address: string;
  context: BrowserContext | undefined;
  page: PreparedPage | undefined;
  /**
   * The render token the lane relay stamps on this context's requests, set (and acknowledged)
   * while the lane was prepared, so a render starts without a round trip to the relay. One per
   * prepared context: the render that takes the lane owns it. Undefined once the lane is cut.
   */
  token: string | undefined;
}

/** A lane a render holds, with its browser; `prepared` says whether it was ready when asked for. */
export interface HeldLane {
  readonly instance: BrowserInstance;
  readonly lane: Lane;
  readonly prepared: boolean;
}

/** Thrown to lane waiters when their browser died or was retired: they try the current one. */
export const INSTANCE_GONE = new Error('browser instance gone');

const CONTEXT_CLOSE_TIMEOUT_MS = 5_000;
/**
 * Prepared lanes kept ready while renders run; spent lanes beyond them are prepared once the
 * browser is idle, so preparing competes with no render (docs/architecture.md §3).
 */
const READY_WHILE_BUSY = 2;
const PREPARE_RETRY_MS = 250;

export class BrowserInstance {
  /** Renders started on this browser. */
  renders = 0;
  /** Renders holding one of its lanes right now. */
  inFlight = 0;
  /** A replacement has been ordered (recycle or memory); it keeps serving until that one is up. */
  replacing = false;
  /** No new render may take a lane; the browser closes once `inFlight` is 0. */
  retired = false;
  /** The browser is gone (crash, kill, or closed on purpose). */
  dead = false;
  /** Closed on purpose: its disconnection is no crash. */
  closing = false;

  private readonly lanes: Lane[];
  private readonly ready: Lane[] = [];
  /** Lanes closed after their render, to be prepared afresh (see READY_WHILE_BUSY). */
  private readonly spent: Lane[] = [];
  /** Lanes being prepared right now. */
  private preparing = 0;
  private readonly waiters = new Set<{ resolve: (lane: Lane) => void; reject: (err: unknown) => void }>();
  private readonly deathHooks = new Set<() => void>();
  private idleHooks: Array<() => void> = [];
  /** The browser-level session lanes' tabs are made through (made once, on first use). */
  private browserSession: Promise<CDPSession> | undefined;

  constructor(
    readonly generation: number,
    readonly browser: Browser,
    readonly pid: number,
    readonly relays: RelaySet,
    private readonly logger: Logger,
    /** Fails the whole browser (a context it cannot close means it is no longer trustworthy). */
    private readonly fail: (reason: string) => void,
    /** Makes the render tokens the guard accepts (lib/render-token.ts). */
    private readonly mintToken: () => string,
  ) {
    this.lanes = relays.laneAddresses.map((address, index) => ({ index, address, context: undefined, page: undefined, token: undefined }));
  }

  /** Starts preparing every lane. */
  prepareAll(): void {
    for (const lane of this.lanes) this.prepare(lane);
  }

  /** How many lanes are prepared and waiting for a render right now. */
  readyLanes(): number {
    return this.ready.length;
  }

  /** The next prepared lane; waits for one while all are in use or being prepared. */
  take(signal: AbortSignal): Promise<Lane> {
    if (this.dead || this.retired) return Promise.reject(INSTANCE_GONE);
    const lane = this.ready.shift();
    if (lane !== undefined) {
      this.replenish();
      return Promise.resolve(lane);
    }
    const waiting = new Promise<Lane>((resolve, reject) => {
      const waiter = {
        resolve: (l: Lane) => {
          signal.removeEventListener('abort', onAbort);
          resolve(l);
        },
        reject: (err: unknown) => {
          signal.removeEventListener('abort', onAbort);
          reject(err);
        },
      };
      const onAbort = (): void => {
        this.waiters.delete(waiter);
        reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiters.add(waiter);
    });
    this.replenish();
    return waiting;
  }

  /**
   * Cuts a lane's relay connections: its token is withdrawn, so nothing more is counted for its
   * render (the guard's tally is final once this resolves).
   */
  async cut(lane: Lane): Promise<void> {
    await this.relays.setToken(lane.index, undefined);
    lane.token = undefined;
  }

  /**
   * Ends a lane's render: its relay connections are cut (if the render ended before its own cut:
   * failure, timeout, client gone), its context closed (closing it is the cleanup) and a fresh
   * one prepared in its place. Resolves to whether the context was closed (false when it could
   * not be, or the browser is gone).
   */
  async release(lane: Lane): Promise<boolean> {
    if (!this.dead && lane.token !== undefined) await this.cut(lane).catch(() => {});
    const context = lane.context;
    lane.context = undefined;
    lane.page = undefined;
    if (context !== undefined) {
      const closed = await withTimeout(context.close(), CONTEXT_CLOSE_TIMEOUT_MS).then(
        () => true,
        () => false,
      );
      if (!closed) {
        if (this.dead) return false;
        this.logger.warn('browser.context_close_failed', { generation: this.generation });
        this.fail('context_close_failed');
        return false;
      }
    }
    this.spent.push(lane);
    this.replenish();
    return true;
  }

  /** Runs `hook` when the browser dies; returns the way to cancel it. */
  onDeath(hook: () => void): () => void {
    if (this.dead) {
      hook();
      return () => {};
    }
    this.deathHooks.add(hook);
    return () => this.deathHooks.delete(hook);
  }

  /** Resolves once no render holds a lane. */
  idle(): Promise<void> {
    if (this.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleHooks.push(resolve));
  }

  /** Called by the pool when a render leaves this browser. */
  renderEnded(): void {
    this.inFlight -= 1;
    this.replenish();
    if (this.inFlight === 0) {
      const hooks = this.idleHooks;
      this.idleHooks = [];
      for (const h of hooks) h();
    }
  }

  /** Takes no new renders; prepared lanes are closed; waiters go to the pool's current browser. */
  retire(): void {
    if (this.retired) return;
    this.retired = true;
    this.rejectWaiters();
    for (const lane of this.ready.splice(0)) void lane.context?.close().catch(() => {});
  }

  /** The browser is gone: renders on it fail at once, waiters move on. */
  markDead(): void {
    if (this.dead) return;
    this.dead = true;
    this.rejectWaiters();
    for (const hook of this.deathHooks) hook();
    this.deathHooks.clear();
    const hooks = this.idleHooks;
    this.idleHooks = [];
    for (const h of hooks) h();
  }

  /** A waiting lane's page crashed before any render took it. */
  private discardCrashed(lane: Lane, page: PreparedPage): void {
    const at = this.ready.indexOf(lane);
    if (at < 0 || lane.page !== page) return; // in use: the render fails on its own
    this.ready.splice(at, 1);
    const context = lane.context;
    lane.context = undefined;
    lane.page = undefined;
    this.logger.warn('browser.prepared_page_crashed', { generation: this.generation });
    void context?.close().catch(() => {});
    this.prepare(lane);
  }

  /** The browser-level session, made once; a failed attempt is forgotten so the next one retries. */
  private session(): Promise<CDPSession> {
    this.browserSession ??= this.browser.target().createCDPSession().catch((err: unknown) => {
      this.browserSession = undefined;
      throw err;
    });
    return this.browserSession;
  }

  private rejectWaiters(): void {
    for (const w of this.waiters) w.reject(INSTANCE_GONE);
    this.waiters.clear();
  }

  /**
   * Prepares spent lanes: all of them once no render is in flight; while renders run, only as
   * many as keep READY_WHILE_BUSY ready (or on their way), and at once for a render waiting.
   */
  private replenish(): void {
    while (this.spent.length > 0) {
      const idle = this.inFlight === 0;
      if (!idle && this.waiters.size === 0 && this.ready.length + this.preparing >= READY_WHILE_BUSY) return;
      this.prepare(this.spent.shift()!);
    }
  }

  private prepare(lane: Lane): void {
    if (this.dead || this.retired) return;
    this.preparing += 1;
    let counted = true;
    const done = (): void => {
      if (counted) this.preparing -= 1;
      counted = false;
    };
    void (async () => {
      const context = await this.browser.createBrowserContext(contextOptions(lane.address));
      // The context is kept only once the lane holds it; every other way out closes it here.
      let offered = false;
      try {
        const page = await PreparedPage.open(this.browser, await this.session(), context.id);
        if (this.dead || this.retired) return;
        // The next render's name, applied before the lane is offered (the relay acknowledges it),
        // so the render's first request already carries it. Nothing in this context has run yet.
        const token = this.mintToken();
        await this.relays.setToken(lane.index, token);
        if (this.dead || this.retired) return;
        lane.token = token;
        lane.context = context;
        lane.page = page;
        offered = true;
        this.offer(lane, page);
      } finally {
        done();
        if (!offered) await context.close().catch(() => {});
      }
    })().catch((err: unknown) => {
      done();
      if (this.dead || this.retired) return;
      this.logger.warn('browser.prepare_failed', { generation: this.generation, detail: (err as Error).message });
      setTimeout(() => this.prepare(lane), PREPARE_RETRY_MS).unref();
    });
  }

  /** Hands a freshly prepared lane to a render waiting for one, or keeps it ready. */
  private offer(lane: Lane, page: PreparedPage): void {
    // A prepared page whose renderer process died is useless: prepare the lane afresh.
    page.onGone(() => this.discardCrashed(lane, page));
    const waiter = this.waiters.values().next();
    if (!waiter.done) {
      this.waiters.delete(waiter.value);
      waiter.value.resolve(lane);
    } else {
      this.ready.push(lane);
    }
  }
}
