/**
 * The one place errors become HTTP answers: ServiceError and
 * ValidationFailure answer as themselves; anything else is logged by kind and answered as
 * 502 `render_failed` (lib/errors.ts answerFor). The error code is kept for settle and metrics.
 */
import type { Middleware, ParameterizedContext } from 'koa';
import { ServiceError, ValidationFailure, answerFor } from '../../lib/errors.ts';
import type { Logger } from '../../lib/log.ts';
import type { RendererState } from './state.ts';

/** Turns what a handler threw into its answer on ctx; the error code is kept for settle and metrics. */
export function answerError(ctx: ParameterizedContext<RendererState>, err: unknown, logger: Logger): void {
  // A client that went away aborts its render; that is no fault to log.
  if (!(err instanceof ServiceError) && !(err instanceof ValidationFailure) && !ctx.state.signal?.aborted) {
    // Only the kind: a message could quote a URL or markup.
    logger.error('request.unexpected_error', { kind: err instanceof Error ? err.name : typeof err });
  }
  const answer = answerFor(err);
  ctx.state.errorCode = err instanceof ValidationFailure ? undefined : String(answer.body.error);
  if (err instanceof ServiceError && err.code === 'url_rejected') ctx.state.rejectReason = err.extra.reason;
  // A 413 leaves the rest of the body unread: the connection cannot carry another request.
  if (answer.status === 413) ctx.set('connection', 'close');
  ctx.status = answer.status;
  ctx.set(answer.headers);
  ctx.body = answer.body;
}

export function errorAnswers(logger: Logger): Middleware<RendererState> {
  return async (ctx, next) => {
    try {
      await next();
    } catch (err) {
      answerError(ctx, err, logger);
    }
  };
}
