/**
 * Steps every operation's page work shares: the time budget applied to each browser wait,
 * `waitUntil` in puppeteer's terms, navigation with the guard's main-document refusals
 * (spec Part 7: a refusal mid-render, e.g. a redirect hop to a private address, is the same
 * 422 `url_rejected`; document-refusal.ts) and its own answers for targets it could not reach
 * (502 `render_failed`), and markup written into the blank page (spec 4.3 rule 4).
 */
import { TimeoutError, type Frame, type HTTPRequest, type HTTPResponse, type Page, type PuppeteerLifeCycleEvent } from 'puppeteer-core';
import { ServiceError, ValidationFailure } from '../../lib/errors.ts';
import { GUARD_FAILURE_HEADER } from '../../lib/guard-contract.ts';
import type { WaitUntil } from '../schemas/fields.ts';
import { documentHops } from './document-hops.ts';
import { documentRefusal } from './document-refusal.ts';
import { inSpan } from './telemetry.ts';
import type { RenderContext } from './types.ts';

/**
 * `networkidle` is puppeteer's `networkidle0`: no connection for 500 ms. `networkidle2` would
 * call a page idle with two requests still hanging, which is not what a caller waiting for the
 * network to go quiet asks for (docs/decisions.md).
 */
export const LIFECYCLE: Readonly<Record<WaitUntil, PuppeteerLifeCycleEvent>> = {
  load: 'load',
  domcontentloaded: 'domcontentloaded',
  networkidle: 'networkidle0',
};

/** Quiet time that counts as network idle (puppeteer's networkidle0 uses the same 500 ms). */
export const NETWORK_IDLE_MS = 500;

/** Milliseconds left before the deadline, at least 1. */
export function remaining(deadline: number, now: () => number = Date.now): number {
  return Math.max(1, deadline - now());
}

/** Turns a browser-side failure into the spec's code: a puppeteer timeout is 504, the rest 502. */
export function asServiceError(err: unknown): ServiceError | unknown {
  if (err instanceof ServiceError) return err;
  if (err instanceof TimeoutError) return new ServiceError('render_timeout');
  return err;
}

/**
 * The guard's failure mark on the document's answer: the target could not be reached (refused,
 * reset, no connect or no answer in the guard's time). Chromium would render the guard's short
 * text as if it were the page; it is 502 `render_failed` instead, as an https target whose tunnel
 * fails already is. Not 504 `render_timeout`: the render budget did not run out, the target did
 * (docs/decisions.md). Read on `http:` answers alone: the guard forwards those itself and drops
 * the header from every target's answer (lib/guard-contract.ts), while an `https:` answer came
 * through a tunnel, where the header could only be the target's own.
 */
function guardFailed(response: HTTPResponse): boolean {
  return response.url().startsWith('http:') && response.headers()[GUARD_FAILURE_HEADER] !== undefined;
}

/**
 * Loads `url` in the render's page. A document the guard refused (its own record says so, see
 * document-refusal.ts) is 422 with the guard's reason; one that could not be loaded is 502.
 */
export async function navigate(ctx: RenderContext, url: string, waitUntil: WaitUntil, deadline: number): Promise<void> {
  const page = await ctx.page();
  await inSpan('navigate', { 'tintype.wait_until': waitUntil }, async () => {
    const documents = await documentHops(ctx.cdp.session, ctx.cdp.frameId);
    let response: HTTPResponse | null;
    try {
      response = await page.goto(url, { waitUntil: LIFECYCLE[waitUntil], timeout: remaining(deadline) });
    } catch (err) {
      const mapped = asServiceError(err);
      if (mapped instanceof ServiceError) throw mapped;
      // A tunnel the guard refused fails the navigation itself (net::ERR_TUNNEL_CONNECTION_FAILED).
      const reason = documentRefusal(documents.failed(url, err), await ctx.tally().catch(() => undefined));
      throw reason === undefined ? new ServiceError('render_failed') : new ServiceError('url_rejected', { reason });
    } finally {
      documents.dispose();
    }
    if (response === null) return;
    if (guardFailed(response)) throw new ServiceError('render_failed');
    if (response.status() === 403) {
      const reason = documentRefusal({ url: response.url(), answered: true, status: 403 }, await ctx.tally().catch(() => undefined));
      if (reason !== undefined) throw new ServiceError('url_rejected', { reason });
    }
    await followTopFrame(page, waitUntil, deadline);
  });
}

/** Navigations of the top frame followed after the first (a page refreshing itself forever stops here). */
const MAX_FOLLOWED = 5;
/** One turn of the page's task loop: a navigation scheduled for right after load has started after it. */
const ONE_TURN = 'new Promise((resolve) => setTimeout(resolve, 0))';
/** The new document's readiness for each waitUntil (networkidle adds the quiet network). */
const READY: Readonly<Record<WaitUntil, string>> = {
  load: "document.readyState === 'complete'",
  domcontentloaded: "document.readyState !== 'loading'",
  networkidle: "document.readyState === 'complete'",
};

/**
 * A top frame that navigates again right after it loaded (a meta refresh, a redirect in a load
 * handler) is followed to the page it lands on, to the same `waitUntil`: the capture then shows
 * that page, and never runs while the document is being replaced (which fails it).
 */
async function followTopFrame(page: Page, waitUntil: WaitUntil, deadline: number): Promise<void> {
  const main = page.mainFrame();
  for (let hop = 0; hop < MAX_FOLLOWED; hop += 1) {
    let request: HTTPRequest | undefined;
    let markCommitted!: () => void;
    const committed = new Promise<void>((resolve) => (markCommitted = resolve));
    let markEnded!: () => void;
    const ended = new Promise<void>((resolve) => (markEnded = resolve));
    const onRequest = (r: HTTPRequest): void => {
      if (r.isNavigationRequest() && r.frame() === main) request = r;
    };
    const onEnded = (r: HTTPRequest): void => {
      if (r === request) markEnded();
    };
    const onNavigated = (f: Frame): void => {
      if (f === main) markCommitted();
    };
    page.on('request', onRequest);
    page.on('requestfailed', onEnded);
    page.on('requestfinished', onEnded);
    page.on('framenavigated', onNavigated);
    let timer: NodeJS.Timeout | undefined;
    try {
      // A rejected turn means the document went away under it: a navigation committed.
      const turned = await page.evaluate(ONE_TURN).then(() => true, () => false);
      if (turned && request === undefined) return;
      // Committed, or the navigation ended without a new document (a download, a 204).
      const expired = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new ServiceError('render_timeout')), remaining(deadline));
      });
      await Promise.race([committed, turned ? ended : committed, expired]);
      await page.waitForFunction(READY[waitUntil], { timeout: remaining(deadline) });
      if (waitUntil === 'networkidle') await page.waitForNetworkIdle({ idleTime: NETWORK_IDLE_MS, timeout: remaining(deadline) });
    } catch (err) {
      const mapped = asServiceError(err);
      throw mapped instanceof ServiceError ? mapped : new ServiceError('render_failed');
    } finally {
      clearTimeout(timer);
      page.off('request', onRequest);
      page.off('requestfailed', onEnded);
      page.off('requestfinished', onEnded);
      page.off('framenavigated', onNavigated);
    }
  }
}

/**
 * Waits until none of the page's requests has been in flight for NETWORK_IDLE_MS. A request
 * counts until its body has finished or failed, so a response that keeps streaming keeps the
 * network busy, as Chromium's own networkIdle would.
 */
function networkQuiet(page: Page): { quiet(timeoutMs: number): Promise<void>; dispose(): void } {
  const inflight = new Set<HTTPRequest>();
  let onChange = (): void => {};
  const started = (r: HTTPRequest): void => {
    inflight.add(r);
    onChange();
  };
  const ended = (r: HTTPRequest): void => {
    inflight.delete(r);
    onChange();
  };
  page.on('request', started);
  page.on('requestfinished', ended);
  page.on('requestfailed', ended);
  return {
    quiet(timeoutMs) {
      return new Promise<void>((resolve, reject) => {
        let idle: NodeJS.Timeout | undefined;
        const finish = (): void => {
          clearTimeout(idle);
          clearTimeout(limit);
          onChange = () => {};
        };
        const limit = setTimeout(() => (finish(), reject(new ServiceError('render_timeout'))), timeoutMs);
        onChange = () => {
          clearTimeout(idle);
          if (inflight.size === 0) idle = setTimeout(() => (finish(), resolve()), NETWORK_IDLE_MS);
        };
        onChange();
      });
    },
    dispose() {
      page.off('request', started);
      page.off('requestfinished', ended);
      page.off('requestfailed', ended);
    },
  };
}

/**
 * Writes `html` into the render's blank page. The page stays `about:blank` with its opaque
 * origin, so relative URLs resolve against nothing and fetch nothing (spec 4.3 rule 4).
 * `networkidle` goes through the tab's puppeteer Page; the rest over raw CDP.
 */
export async function writeMarkup(ctx: RenderContext, html: string, waitUntil: WaitUntil, deadline: number): Promise<void> {
  await inSpan('navigate', { 'tintype.wait_until': waitUntil, 'tintype.html_length': html.length }, async () => {
    if (waitUntil !== 'networkidle') {
      try {
        await ctx.cdp.writeMarkup(html, waitUntil, ctx.signal);
      } catch (err) {
        if (ctx.signal.aborted) throw err;
        throw new ServiceError('render_failed');
      }
      return;
    }
    const page = await ctx.page();
    // Chromium reports no new networkIdle lifecycle event for a document written into the page,
    // so puppeteer's networkidle0 would wait out the whole budget: load, then our own count.
    const network = networkQuiet(page);
    try {
      await page.setContent(html, { waitUntil: 'load', timeout: remaining(deadline) });
      await network.quiet(remaining(deadline));
    } catch (err) {
      const mapped = asServiceError(err);
      throw mapped instanceof ServiceError ? mapped : new ServiceError('render_failed');
    } finally {
      network.dispose();
    }
  });
}

/** Runs a capture step, mapping its failures to the spec's codes. */
export async function capture<T>(attributes: Record<string, string | number | boolean>, fn: () => Promise<T>): Promise<T> {
  return inSpan('capture', attributes, async () => {
    try {
      return await fn();
    } catch (err) {
      if (err instanceof ValidationFailure) throw err;
      const mapped = asServiceError(err);
      throw mapped instanceof ServiceError ? mapped : new ServiceError('render_failed');
    }
  });
}
