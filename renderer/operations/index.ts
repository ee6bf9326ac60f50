/**
 * The render operations of spec 4.2 to 4.4 as functions of a parsed JSON body: validate ▸ key ▸
 * produce (judge, cache, slot, page work). The HTTP layer (renderer/server) only writes what
 * these return.
 */
import { htmlToImageKey, normaliseUrl, pdfKey, screenshotKey } from '../cache/keys.ts';
import { parseHtmlToImage, parsePdf, parseScreenshot } from '../schemas/index.ts';
import { htmlToImageWork } from './html-to-image.ts';
import { pdfWork } from './pdf.ts';
import { produce, type ProduceDeps, type RenderOperation } from './produce.ts';
import { screenshotContentType, screenshotWork } from './screenshot.ts';
import type { RenderLease, Rendered } from './types.ts';

export type { RenderContext, RenderJob, RenderPool, Rendered, UrlJudge } from './types.ts';
export type { RenderOperation } from './produce.ts';
export { ping, type PingBody } from './ping.ts';

export interface OperationDeps extends ProduceDeps {
  renderTimeoutMs: number;
}

/** How one call is bounded: its client's abort signal and when it arrived. */
export interface CallScope {
  signal: AbortSignal;
  /** Epoch ms the request arrived; the budget counts from here. */
  startedAt: number;
  /** The call's lease: the guard holds its render to the key's egress policy (lib/egress.ts). */
  lease?: RenderLease;
}

export type RenderOperations = Record<RenderOperation, (body: unknown, scope: CallScope) => Promise<Rendered>>;

/**
 * The request with its page address as the cache key names it (spec Part 8 rule 3: no
 * fragment). Chromium is sent to exactly that address: loaded with its fragment, a
 * hash-routed page would draw what the first caller's fragment chose, and every later caller
 * with the same key would be served that picture.
 */
function keyedAddress<R extends { url?: string | undefined }>(req: R): R {
  return req.url === undefined ? req : { ...req, url: normaliseUrl(req.url) };
}

export function createOperations(deps: OperationDeps): RenderOperations {
  const deadline = (scope: CallScope) => scope.startedAt + deps.renderTimeoutMs;
  return {
    async screenshot(body, scope) {
      const req = keyedAddress(await parseScreenshot(body));
      const by = deadline(scope);
      return produce(deps, {
        operation: 'screenshot', key: screenshotKey(req), contentType: screenshotContentType(req), url: req.url,
        refusalFailsRender: false, deadline: by, signal: scope.signal, lease: scope.lease,
        work: (ctx) => screenshotWork(ctx, req, by),
      });
    },
    async 'html-to-image'(body, scope) {
      const req = await parseHtmlToImage(body);
      const by = deadline(scope);
      return produce(deps, {
        operation: 'html-to-image', key: htmlToImageKey(req), contentType: 'image/png',
        refusalFailsRender: true, deadline: by, signal: scope.signal, lease: scope.lease,
        work: (ctx) => htmlToImageWork(ctx, req, by),
      });
    },
    async pdf(body, scope) {
      const req = keyedAddress(await parsePdf(body));
      const by = deadline(scope);
      return produce(deps, {
        operation: 'pdf', key: pdfKey(req), contentType: 'application/pdf',
        ...(req.url !== undefined ? { url: req.url } : {}),
        // The html form meets sub-resources as html-to-image does (4.4 rule 2), so a render that
        // fails with refusals in it is the same 422 as 4.3 rule 5 (docs/decisions.md).
        refusalFailsRender: req.url === undefined, deadline: by, signal: scope.signal, lease: scope.lease,
        work: (ctx) => pdfWork(ctx, req, by, deps.maxOutputBytes),
      });
    },
  };
}
