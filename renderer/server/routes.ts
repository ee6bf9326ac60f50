/**
 * The /v1 routes (spec Part 4) and the headers of spec 2.1. Handlers only translate between
 * HTTP and the operations. Routes are exact: case-sensitive, no trailing slash, no other
 * spelling (docs/architecture.md §4); 404 and 405 as docs/decisions.md says.
 */
import type { Middleware } from 'koa';
import { ServiceError } from '../../lib/errors.ts';
import { OPERATIONS, type Operation } from '../../lib/policy-contract.ts';
import { ping, type RenderOperation, type RenderOperations, type Rendered } from '../operations/index.ts';
import { BLOCKED_HEADER, CACHE_HEADER, RENDER_CACHE_CONTROL } from './answer-headers.ts';
import type { OgRoute } from './og.ts';
import { readJsonBody } from './body.ts';
import type { RendererState } from './state.ts';

function renderRoute(operations: RenderOperations, operation: RenderOperation): Middleware<RendererState> {
  return async (ctx) => {
    const body = await readJsonBody(ctx.req);
    const rendered: Rendered = await operations[operation](body, {
      signal: ctx.state.signal, startedAt: ctx.state.startedAt, ...(ctx.state.lease === undefined ? {} : { lease: ctx.state.lease }),
    });
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

/**
 * The handler of the operation whose path the request names exactly (requestScope has matched
 * it, case and all, to the lease's operation); 405 for another method, 404 for an operation
 * this renderer does not serve (og without its drawing).
 */
export function v1Routes(operations: RenderOperations, og: OgRoute | undefined): Middleware<RendererState>[] {
  const handlers: Record<Operation, Middleware<RendererState> | undefined> = {
    ping: (ctx) => {
      ctx.body = ping();
    },
    screenshot: renderRoute(operations, 'screenshot'),
    'html-to-image': renderRoute(operations, 'html-to-image'),
    pdf: renderRoute(operations, 'pdf'),
    og,
  };
  return [async (ctx, next) => {
    const operation = ctx.state.operation;
    const handler = operation === undefined ? undefined : handlers[operation];
    if (operation === undefined || handler === undefined) throw new ServiceError('not_found');
    if (ctx.method !== OPERATIONS[operation].method) throw new ServiceError('method_not_allowed');
    return handler(ctx, next);
  }];
}
