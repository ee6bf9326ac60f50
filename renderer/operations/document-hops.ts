/**
 * The hops of the page's own navigation as Chromium reports them over DevTools, read on the
 * prepared tab's session (docs/architecture.md §2 "guard"). Each redirect hop of the main frame's
 * document is a `Network.requestWillBeSent` of type Document, in order, before the navigation
 * fails or commits. puppeteer's `request` event for a redirected hop is held back until the 3xx
 * answer's extra-info event arrives, which under load comes after `goto` has already rejected: a
 * document refused at its https hop would then be taken for its first, http, hop.
 */
import type { CDPSession } from 'puppeteer-core';
import { TUNNEL_FAILED, type DocumentOutcome } from './document-refusal.ts';

interface WillBeSent {
  requestId: string;
  frameId?: string;
  type?: string;
  request: { url: string };
}

interface LoadingFailed {
  requestId: string;
  errorText: string;
}

export interface DocumentHops {
  /** What Chromium met for a navigation that failed without an answer (see failedDocument). */
  failed(url: string, err: unknown): DocumentOutcome;
  /** Stops following; Network is turned off on the session without waiting for it. */
  dispose(): void;
}

/** Follows the main frame's document hops on `session` until disposed. */
export async function documentHops(session: CDPSession, mainFrameId: string): Promise<DocumentHops> {
  let last: { requestId: string; url: string } | undefined;
  const errors = new Map<string, string>();
  const sent = (e: WillBeSent): void => {
    if (e.type === 'Document' && e.frameId === mainFrameId) last = { requestId: e.requestId, url: e.request.url };
  };
  const failed = (e: LoadingFailed): void => void errors.set(e.requestId, e.errorText);
  session.on('Network.requestWillBeSent', sent);
  session.on('Network.loadingFailed', failed);
  await session.send('Network.enable');
  return {
    failed: (url, err) => failedDocument(last === undefined ? undefined : { url: last.url, errorText: errors.get(last.requestId) }, url, err),
    dispose() {
      session.off('Network.requestWillBeSent', sent);
      session.off('Network.loadingFailed', failed);
      void session.send('Network.disable').catch(() => {});
    },
  };
}

/**
 * What Chromium met for a document whose navigation failed without an answer: its last hop seen
 * (`url` when none was) and the error, the hop's own when its failure came in, else the one
 * puppeteer words as `<net::ERR_…> at <url>` (the URL it names is always the first hop's).
 * A tunnel is only ever opened for an https hop: a tunnel error after a last hop seen over http
 * means a later hop is missing from what was seen, so no hop is named and no refusal can match.
 */
export function failedDocument(last: { url: string; errorText: string | undefined } | undefined, url: string, err: unknown): DocumentOutcome {
  const fromMessage = err instanceof Error ? /^net::ERR_[A-Z0-9_]+/.exec(err.message)?.[0] : undefined;
  const hop = last ?? { url, errorText: undefined };
  const errorText = hop.errorText ?? fromMessage ?? '';
  if (errorText === TUNNEL_FAILED && hop.url.startsWith('http:')) return { url: '', answered: false, errorText };
  return { url: hop.url, answered: false, errorText };
}
