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
 * It is the one owner of the tab's emulation (docs/architecture.md §3): the viewport, scale,
 * screen, media and background are set on its session alone, before the document is requested,
 * so a page sees the request's viewport while it loads. The puppeteer Page never emulates
 * anything (the browser is driven with `defaultViewport: null`, and no render calls its
 * `setViewport`, `emulateMediaType` or `screenshot`): a second session's emulation of the same
 * tab is how a page came to load at the prepared size and be resized before its capture.
 *
 * It works over whatever transport puppeteer-core's connection has (a pipe, a socket): only
 * `CDPSession.send`, its events and the connection's `session(id)` are used.
 */
import type { Browser, CDPSession, Page, Protocol, Target } from 'puppeteer-core';
import { untilAborted } from './bounded-wait.ts';

/** The viewport every lane is prepared with: spec 4.3's default size and the pdf layout (4.4 rule 1). */
const PREPARED_VIEWPORT: Readonly<Viewport> = { width: 1280, height: 800, deviceScaleFactor: 1 };

export interface Viewport {
  width: number;
  height: number;
  deviceScaleFactor: number;
}

/** What `screenshot` captures. */
export interface ScreenshotOptions {
  format: 'png' | 'jpeg';
  /** JPEG quality, 1 to 100. */
  quality?: number;
  omitBackground: boolean;
  /** CSS pixels from the top of the page to capture at the viewport's width; the viewport when omitted. */
  height?: number;
}

/** A transparent default background, as puppeteer's `omitBackground` sets it. */
const TRANSPARENT = { color: { r: 0, g: 0, b: 0, a: 0 } };

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

  /**
   * Sets the viewport and scale the next document loads at, unless the tab has them already.
   * Call it before the document is requested: the page lays itself out, picks its `srcset`
   * candidates and runs its media queries while it loads, not at the capture.
   */
  async setViewport(v: Viewport): Promise<void> {
    const now = this.viewport;
    if (now.width === v.width && now.height === v.height && now.deviceScaleFactor === v.deviceScaleFactor) return;
    await this.session.send('Emulation.setDeviceMetricsOverride', deviceMetrics(v));
    this.viewport = { ...v };
  }

  /** Emulates CSS media `screen` (Chromium prints with `print` already; spec 4.4 `media`). */
  async emulateScreenMedia(): Promise<void> {
    await this.session.send('Emulation.setEmulatedMedia', { media: 'screen' });
  }

  /**
   * Captures the tab at its viewport's scale: the viewport itself, or with `height` the top
   * `height` CSS pixels of the whole page at the viewport's width (beyond the viewport).
   */
  async screenshot(o: ScreenshotOptions): Promise<Buffer> {
    // As puppeteer's omitBackground: a page that sets no background of its own shows through,
    // in a PNG only (a JPEG has no alpha, so its ground would turn black).
    if (o.omitBackground && o.format === 'png') await this.session.send('Emulation.setDefaultBackgroundColorOverride', TRANSPARENT);
    const { data } = await this.session.send('Page.captureScreenshot', {
      format: o.format,
      ...(o.quality === undefined ? {} : { quality: o.quality }),
      ...(o.height === undefined
        ? { captureBeyondViewport: false }
        : { clip: { x: 0, y: 0, width: this.viewport.width, height: o.height, scale: 1 }, captureBeyondViewport: true }),
    });
    return Buffer.from(data, 'base64');
  }

  /** Evaluates `expression` in the page and returns its value. */
  async evaluate(expression: string): Promise<unknown> {
    const { result, exceptionDetails } = await this.session.send('Runtime.evaluate', { expression, returnByValue: true, awaitPromise: true });
    if (exceptionDetails !== undefined) throw new Error('the page threw');
    return result.value;
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

/**
 * Emulation.setDeviceMetricsOverride's parameters for `v`. The screen is the viewport's size: a
 * real device's screen is never narrower than its window, while headless Chromium's own is
 * 800 × 600 whatever the viewport, which pages that size themselves by `screen` would believe.
 */
function deviceMetrics(v: Viewport): Protocol.Emulation.SetDeviceMetricsOverrideRequest {
  return {
    width: v.width, height: v.height, deviceScaleFactor: v.deviceScaleFactor, mobile: false,
    screenWidth: v.width, screenHeight: v.height,
    screenOrientation: { angle: 0, type: 'portraitPrimary' },
  };
}
