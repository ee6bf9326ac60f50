/**
 * Whether the guard refused the page's own document (spec Part 7: 422 `url_rejected`, also for
 * a refusal mid-render such as a redirect hop to a private address), decided from the guard's
 * record of the render's refused requests (lib/guard-contract.ts), never from headers on an
 * answer: inside a CONNECT tunnel every header is the target's, so an https target could write
 * `x-guard-reason` itself and make its own full render an unmetered 422. A refused sub-resource
 * never makes the document refused, whatever the page does afterwards.
 */
import type { RejectReason } from '../../lib/errors.ts';
import { documentRequestName, type RenderTally } from '../../lib/guard-contract.ts';

/** What became of the last request of the page's navigation (the last hop of its redirects). */
export type DocumentOutcome =
  | { url: string; answered: true; status: number }
  | { url: string; answered: false; errorText: string };

/** Chromium's error for a document whose proxy tunnel was not opened (the guard's 403 among others). */
export const TUNNEL_FAILED = 'net::ERR_TUNNEL_CONNECTION_FAILED';

/**
 * The reason the guard refused the document, or undefined when it did not. Refused means: the
 * guard's record names the document's own request, and what Chromium met is what that refusal
 * looks like from its side. Over `http:` the guard answers the request itself, with 403; over
 * `https:` the tunnel is never opened (an answer of any status came through an open tunnel, from
 * the target).
 */
export function documentRefusal(document: DocumentOutcome, tally: RenderTally | undefined): RejectReason | undefined {
  if (tally === undefined || tally.refused.length === 0) return undefined;
  let scheme: string;
  try {
    scheme = new URL(document.url).protocol;
  } catch {
    return undefined;
  }
  const looksRefused =
    scheme === 'http:' ? document.answered && document.status === 403
    : scheme === 'https:' ? !document.answered && document.errorText === TUNNEL_FAILED
    : false;
  if (!looksRefused) return undefined;
  const name = documentRequestName(document.url);
  return tally.refused.find((r) => r.request === name)?.reason;
}
