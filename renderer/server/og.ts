/**
 * GET /v1/og (spec 4.5): query ▸ card ▸ cache ▸ drawing. The drawing itself (renderer/og)
 * makes no network request and uses no browser. Headers: `cache-control: private,
 * max-age=86400` and `x-cache` (spec 2.1). The query goes to the access line (4.5 rule 7), bounded;
 * the logger masks anything shaped like a key.
 */
import type { Middleware } from 'koa';
import { ServiceError } from '../../lib/errors.ts';
import type { RenderCache } from '../cache/cache.ts';
import { inSpan } from '../operations/telemetry.ts';
import { CACHE_HEADER, OG_CACHE_CONTROL } from './answer-headers.ts';
import type { RendererState } from './state.ts';

/** The OG drawing as the route uses it (renderer/og). */
export interface OgDrawing<Card> {
  parse(query: URLSearchParams): Card;
  key(card: Card): string;
  draw(card: Card, signal: AbortSignal): Promise<Buffer>;
}

export type OgRoute = Middleware<RendererState>;

/** How much of an OG query the access line keeps. */
const OG_QUERY_LOG_MAX = 2048;

export function ogRoute<Card>(drawing: OgDrawing<Card>, cache: RenderCache, maxOutputBytes: number): OgRoute {
  return async (ctx) => {
    ctx.state.ogQuery = ctx.querystring.slice(0, OG_QUERY_LOG_MAX);
    const card = drawing.parse(new URLSearchParams(ctx.querystring));
    const key = drawing.key(card);
    const body = await inSpan('render', { 'tintype.operation': 'og' }, async (span) => {
      const hit = await inSpan('cache.lookup', {}, () => cache.get(key));
      if (hit !== undefined) {
        ctx.state.cache = 'hit';
        span.setAttribute('tintype.cache', 'hit');
        return hit.body;
      }
      const png = await inSpan('og.draw', {}, () => drawing.draw(card, ctx.state.signal));
      if (png.length > maxOutputBytes) throw new ServiceError('render_too_large');
      await inSpan('cache.store', { 'tintype.bytes': png.length }, () => cache.set(key, { body: png, contentType: 'image/png' }));
      ctx.state.cache = 'miss';
      span.setAttribute('tintype.cache', 'miss');
      return png;
    });
    ctx.status = 200;
    ctx.type = 'image/png';
    ctx.set(CACHE_HEADER, ctx.state.cache ?? 'miss');
    ctx.set('cache-control', OG_CACHE_CONTROL);
    ctx.body = body;
  };
}
