/**
 * What every /v1 request carries from arrival to settle (docs/architecture.md §2 "settle"):
 * - the lease the edge granted (`x-tintype-lease`); without one the renderer answers 401, since
 *   only the edge may call it;
 * - an abort signal that fires when the client goes away before its answer is written, so the
 *   render stops at once and its slot is freed;
 * - after the answer is written (or abandoned), one outcome — status, error code, cache — handed
 *   to the settler, the metrics and the access log. An abandoned answer settles as 499, which is
 *   not metered (lib/errors.ts isMetered), and only after the handler let go of its slot.
 * - the trace context the edge sent (`traceparent`, README "Telemetry"), so the render's spans and the
 *   settle call join the request's trace.
 */
import { ROOT_CONTEXT, context, propagation } from '@opentelemetry/api';
import type { Middleware } from 'koa';
import { ServiceError } from '../../lib/errors.ts';
import { LEASE_HEADER, OPERATIONS, operationFor, type SettleRequest } from '../../lib/policy-contract.ts';
import type { RendererState } from './state.ts';

/** Status recorded for an answer the client did not wait for (nginx's "client closed request"). */
export const CLIENT_CLOSED = 499;

/** The lease id form policy issues and accepts in settle (policy/authorize.ts parseSettle). */
const LEASE_FORM = /^[A-Za-z0-9_-]{1,64}$/;

/** The outcome of one /v1 request, as every listener sees it. */
export interface Answered {
  lease: string;
  operation: RendererState['operation'];
  status: number;
  errorCode?: string;
  cache?: SettleRequest['cache'];
  blocked?: number;
  durationMs: number;
  state: RendererState;
}

export function requestScope(options: {
  now: () => number;
  /** Called once per leased request on arrival; onAnswered follows exactly once. */
  onAccepted?: () => void;
  onAnswered: (a: Answered) => void;
}): Middleware<RendererState> {
  return async (ctx, next) => {
    const traced = propagation.extract(ROOT_CONTEXT, ctx.headers);
    const controller = new AbortController();
    ctx.state.signal = controller.signal;
    ctx.state.startedAt = options.now();
    const operation = operationFor(ctx.path);
    if (operation !== undefined) ctx.state.operation = operation;
    if (ctx.path !== '/v1' && !ctx.path.startsWith('/v1/')) return next();

    const lease = ctx.get(LEASE_HEADER);
    if (!LEASE_FORM.test(lease)) throw new ServiceError('unauthorized');

    options.onAccepted?.();
    let release!: () => void;
    const handlerDone = new Promise<void>((resolve) => (release = resolve));
    ctx.res.once('close', () => {
      const finished = ctx.res.writableFinished;
      if (!finished) controller.abort();
      // Settle only once the handler has let go (its slot freed), so the concurrency place
      // policy frees is really free.
      void handlerDone.then(() => context.with(traced, () => {
        const status = finished ? ctx.res.statusCode : CLIENT_CLOSED;
        const render = operation !== undefined && OPERATIONS[operation].render;
        options.onAnswered({
          lease,
          operation,
          status,
          ...(finished && ctx.state.errorCode !== undefined ? { errorCode: ctx.state.errorCode } : {}),
          ...(status === 200 && render && ctx.state.cache !== undefined ? { cache: ctx.state.cache } : {}),
          ...(ctx.state.blocked !== undefined ? { blocked: ctx.state.blocked } : {}),
          durationMs: options.now() - ctx.state.startedAt,
          state: ctx.state,
        });
      }));
    });
    try {
      await context.with(traced, next);
    } finally {
      release();
    }
  };
}
