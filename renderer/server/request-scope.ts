/**
 * What every /v1 request carries from arrival to settle (docs/architecture.md §2 "settle"):
 * - the signed lease the edge got from policy (`x-tintype-lease`), checked before any work: a
 *   missing, forged, expired lease or one for another operation is 401 and settles nothing, so
 *   reaching the renderer's port is not enough to render (README "Security");
 * - an abort signal that fires when the client goes away before its answer is written, so the
 *   render stops at once and its slot is freed;
 * - once the answer is committed (status and headers decided, the whole body handed to the
 *   socket; not when the client has read it), one outcome — status, error code, cache — handed
 *   to the settler, the metrics and the access log, so a slow reader cannot outlive its lease
 *   and go unmetered. An answer abandoned before that settles as 499, which is not metered
 *   (lib/errors.ts isMetered), and only after the handler let go of its slot.
 * - the trace context the edge sent (`traceparent`, README "Telemetry"), so the render's spans and the
 *   settle call join the request's trace.
 */
import { ROOT_CONTEXT, context, propagation } from '@opentelemetry/api';
import type { Middleware } from 'koa';
import { ServiceError } from '../../lib/errors.ts';
import type { LeaseClaims } from '../../lib/lease.ts';
import { ATTEMPT_HEADER, LEASE_HEADER, OPERATIONS, leavesLeaseOpen, operationFor, type SettleRequest } from '../../lib/policy-contract.ts';
import type { RendererState } from './state.ts';

/** Status recorded for an answer the client did not wait for (nginx's "client closed request"). */
export const CLIENT_CLOSED = 499;

/** The outcome of one /v1 request, as every listener sees it. */
export interface Answered {
  lease: string;
  operation: RendererState['operation'];
  status: number;
  errorCode?: string;
  cache?: SettleRequest['cache'];
  blocked?: number;
  durationMs: number;
  /** A 503 the edge may retry on another renderer: the lease stays open for it, unsettled here. */
  leaseLeftOpen: boolean;
  state: RendererState;
}

export function requestScope(options: {
  now: () => number;
  /** The claims of a lease signed by policy's secret, or undefined. */
  verifyLease: (token: string) => LeaseClaims | undefined;
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
    const claims = options.verifyLease(lease);
    // A lease is good for the operation it was granted for (a ping lease holds no render place);
    // a path that names no operation does no work and is answered 404 or 405.
    const otherOperation = operation !== undefined && claims?.operation !== operation;
    if (claims === undefined || otherOperation || claims.expiresAt <= options.now()) {
      throw new ServiceError('unauthorized');
    }

    options.onAccepted?.();
    let release!: () => void;
    const handlerDone = new Promise<void>((resolve) => (release = resolve));
    let outcomeTaken = false;
    // `prefinish`: the answer is committed, its last byte handed to the socket. `close` before
    // it: the client went away first.
    const answered = (committed: boolean): void => {
      if (outcomeTaken) return;
      outcomeTaken = true;
      if (!committed) controller.abort();
      // Settle only once the handler has let go (its slot freed), so the concurrency place
      // policy frees is really free.
      void handlerDone.then(() => context.with(traced, () => {
        const finished = committed;
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
          leaseLeftOpen: finished && leavesLeaseOpen(status, ctx.get(ATTEMPT_HEADER) || undefined),
          state: ctx.state,
        });
      }));
    };
    ctx.res.once('prefinish', () => answered(true));
    ctx.res.once('close', () => answered(ctx.res.writableFinished));
    try {
      await context.with(traced, next);
    } finally {
      release();
    }
  };
}
