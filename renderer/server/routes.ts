/**
 * The /v1 routes (spec Part 4) and the headers of spec 2.1. Handlers only translate between
 * HTTP and the operations; 404 and 405 for anything else (docs/decisions.md).
 */
import Router from '@koa/router';
import type { Middleware } from 'koa';
import { ServiceError } from '../../lib/errors.ts';
import { OPERATIONS } from '../../lib/policy-contract.ts';
import { ping, type RenderOperation, type RenderOperations, type Rendered } from '../operations/index.ts';
import { BLOCKED_HEADER, CACHE_HEADER, RENDER_CACHE_CONTROL } from './answer-headers.ts';
import type { OgRoute } from './og.ts';
import { readJsonBody } from './body.ts';
import type { RendererState } from './state.ts';

function renderRoute(operations: RenderOperations, operation: RenderOperation): Middleware<RendererState> {
  return async (ctx) => {
    const body = await readJsonBody(ctx.req);
    const rendered: Rendered = await operations[operation](body, { signal: ctx.state.signal, startedAt: ctx.state.startedAt });
    ctx.state.cache = rendered.cache;
    ctx.status = 200;
    ctx.type = rendered.contentType;
    ctx.set(CACHE_HEADER, rendered.cache);
    ctx.set('cache-control', RENDER_CACHE_CONTROL);
    // Spec 2.1: describes the live render only (absent on a hit); for pdf only when not zero.
    if (rendered.blocked !== undefined) {
      ctx.state.blocked = rendered.blocked;
      if (operation !== 'pdf' || rendered.blocked > 0) ctx.set(BLOCKED_HEADER, String(rendered.blocked));
    }
    ctx.body = rendered.body;
  };
}

export function v1Routes(operations: RenderOperations, og: OgRoute | undefined): Middleware<RendererState>[] {
  const router = new Router<RendererState>({ prefix: '/v1' });
  router.get('/ping', (ctx) => {
    ctx.body = ping();
  });
  router.post('/screenshot', renderRoute(operations, 'screenshot'));
  router.post('/html-to-image', renderRoute(operations, 'html-to-image'));
  router.post('/pdf', renderRoute(operations, 'pdf'));
  if (og !== undefined) router.get('/og', og);
  const unmatched: Middleware<RendererState> = async (ctx) => {
    const known = Object.values(OPERATIONS).some((o) => o.path === ctx.path && (o.path !== '/v1/og' || og !== undefined));
    throw new ServiceError(known ? 'method_not_allowed' : 'not_found');
  };
  return [router.routes() as unknown as Middleware<RendererState>, unmatched];
}
