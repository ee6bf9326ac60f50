/**
 * A lane's page, driven over raw CDP (docs/architecture.md §3): a tab made in the lane's fresh
 * context with `Target.createTarget` and a DevTools session of its own, ready before any request
 * comes. It has loaded nothing but `about:blank` and has been shown no byte of any request.
 *
 * The default renders (markup to PNG or PDF) drive this session directly: no puppeteer Page is
 * made for them, so none of the domains a Page enables (network, runtime, logs, lifecycle of
 * every frame) costs the browser or node anything. A render that needs more (a URL to load under
 * the navigation rules, network idle) asks for `page()`, the puppeteer Page of the same tab,
 * made then. Either way the tab, its context and its relay are the lane's, and both are closed
 * with the context after the render.
 *
 * It works over whatever transport puppeteer-core's connection has (a pipe, a socket): only
 * `CDPSession.send`, its events and the connection's `session(id)` are used.
 */
import type { Browser, CDPSession, Page, Target } from 'puppeteer-core';
import { untilAborted } from './bounded-wait.ts';

/** The viewport every lane is prepared with: spec 4.3's default size and the pdf layout (4.4 rule 1). */
const PREPARED_VIEWPORT: Readonly<Viewport> = { width: 1280, height: 800, deviceScaleFactor: 1 };

export interface Viewport {
  width: number;
  height: number;
  deviceScaleFactor: number;
}

/** A main-frame document readiness the hot path waits for. */
export type MarkupReadiness = 'load' | 'domcontentloaded';

/** Chromium's lifecycle event for each readiness (Page.lifecycleEvent names). */
const LIFECYCLE_EVENT: Readonly<Record<MarkupReadiness, string>> = { load: 'load', domcontentloaded: 'DOMContentLoaded' };

export class PreparedPage {
  private viewport: Viewport = PREPARED_VIEWPORT;
  private puppeteerPage: Promise<Page> | undefined;
  private gone = false;
  private readonly goneHooks = new Set<() => void>();

  private constructor(
    private readonly browser: Browser,
    browserSession: CDPSession,
    readonly targetId: string,
    /** The tab's own DevTools session. */
    readonly session: CDPSession,
    /** The main frame's id. */
    readonly frameId: string,
  ) {
    // The tab's renderer process crashed, or the tab (and so its session) went away: nothing more comes.
    session.once('Inspector.targetCrashed', () => this.markGone());
    const detached = (e: { sessionId: string }): void => {
      if (e.sessionId !== session.id()) return;
      browserSession.off('Target.detachedFromTarget', detached);
      this.markGone();
    };
    browserSession.on('Target.detachedFromTarget', detached);
    // alert/confirm/prompt would stop the page until the deadline; nobody is there to answer.
    session.on('Page.javascriptDialogOpening', () => {
      void session.send('Page.handleJavaScriptDialog', { accept: false }).catch(() => {});
    });
  }

  /**
   * Opens a blank tab in `contextId` through `browserSession` (a browser-level session), attaches
   * a session of its own and readies it: dialogs answered, crashes reported, lifecycle events on,
   * the prepared viewport set. Nothing is navigated.
   */
  static async open(browser: Browser, browserSession: CDPSession, contextId: string | undefined): Promise<PreparedPage> {
    const { targetId } = await browserSession.send('Target.createTarget', {
      url: 'about:blank',
      ...(contextId === undefined ? {} : { browserContextId: contextId }),
    });
    const { sessionId } = await browserSession.send('Target.attachToTarget', { targetId, flatten: true });
    const session = browserSession.connection()?.session(sessionId);
    if (session === undefined || session === null) throw new Error('no session for the prepared tab');
    try {
      const [, , , , { frameTree }] = await Promise.all([
        session.send('Page.enable'),
        session.send('Inspector.enable'),
        session.send('Page.setLifecycleEventsEnabled', { enabled: true }),
        session.send('Emulation.setDeviceMetricsOverride', deviceMetrics(PREPARED_VIEWPORT)),
        session.send('Page.getFrameTree'),
      ]);
      return new PreparedPage(browser, browserSession, targetId, session, frameTree.frame.id);
    } catch (err) {
      await browserSession.send('Target.closeTarget', { targetId }).catch(() => {});
      throw err;
    }
  }

  /** Runs `hook` when the tab crashes or closes; returns the way to cancel it. */
  onGone(hook: () => void): () => void {
    if (this.gone) {
      hook();
      return () => {};
    }
    this.goneHooks.add(hook);
    return () => this.goneHooks.delete(hook);
  }

  /** Sets the viewport (as puppeteer's setViewport does), unless it is the one the tab has. */
  async setViewport(v: Viewport): Promise<void> {
    const now = this.viewport;
    if (now.width === v.width && now.height === v.height && now.deviceScaleFactor === v.deviceScaleFactor) return;
    await this.session.send('Emulation.setDeviceMetricsOverride', deviceMetrics(v));
    this.viewport = { ...v };
  }

  /**
   * Writes `html` as the blank tab's document (it stays `about:blank` with its opaque origin)
   * and resolves once the document reached `readiness`; rejects when `signal` aborts.
   */
  async writeMarkup(html: string, readiness: MarkupReadiness, signal: AbortSignal): Promise<void> {
    const wanted = LIFECYCLE_EVENT[readiness];
    let written = false;
    let seen = false;
    let done!: () => void;
    const reached = new Promise<void>((resolve) => (done = resolve));
    const onEvent = (e: { frameId: string; name: string }): void => {
      if (e.frameId !== this.frameId) return;
      // The written document starts its lifecycle afresh ("init"): only what follows counts.
      if (e.name === 'init') seen = false;
      else if (e.name === wanted) seen = true;
      if (written && seen) done();
    };
    this.session.on('Page.lifecycleEvent', onEvent);
    try {
      await untilAborted(this.session.send('Page.setDocumentContent', { frameId: this.frameId, html }), signal);
      written = true;
      if (seen) done();
      await untilAborted(reached, signal);
    } finally {
      this.session.off('Page.lifecycleEvent', onEvent);
    }
  }

  /** The puppeteer Page of this tab, made on first use (for the renders the raw path does not drive). */
  page(): Promise<Page> {
    this.puppeteerPage ??= (async () => {
      // puppeteer-core's Target names no id in its public types; its own field is the target's id.
      const isThis = (t: Target): boolean => (t as unknown as { _targetId: string })._targetId === this.targetId;
      const target = this.browser.targets().find(isThis) ?? (await this.browser.waitForTarget(isThis, { timeout: 5_000 }));
      const page = await target.page();
      if (page === null) throw new Error('the prepared tab has no page');
      return page;
    })();
    return this.puppeteerPage;
  }

  private markGone(): void {
    if (this.gone) return;
    this.gone = true;
    for (const hook of this.goneHooks) hook();
    this.goneHooks.clear();
  }
}

/** Emulation.setDeviceMetricsOverride's parameters for `v`, as puppeteer's setViewport sends them. */
function deviceMetrics(v: Viewport): { width: number; height: number; deviceScaleFactor: number; mobile: false; screenOrientation: { angle: number; type: 'portraitPrimary' } } {
  return {
    width: v.width, height: v.height, deviceScaleFactor: v.deviceScaleFactor, mobile: false,
    // puppeteer's setViewport without isLandscape, as every render used it.
    screenOrientation: { angle: 0, type: 'portraitPrimary' },
  };
}
