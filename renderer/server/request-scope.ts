/**
 * What every /v1 request carries from arrival to settle (docs/architecture.md §2 "settle"):
 * - the signed lease the edge got from policy (`x-tintype-lease`), checked before any work, on
 *   every path of this port: a missing, forged or expired lease, or one for any route but the
 *   one the path names exactly (case-sensitive, no trailing slash, no other spelling), is 401 and
 *   settles nothing, so reaching the renderer's port is not enough to render (docs/security.md "The meter's walls");
 * - then claimed at policy, once across all renderers (docs/architecture.md §4): a lease another
 *   attempt holds is 503 `busy`, a spent one 401, and a policy that cannot answer 503 `busy`;
 *   none of these does any work or settles anything. A 503 the edge may retry gives the claim back;
 * - an abort signal that fires when the client goes away before its answer is decided, so the
 *   render stops at once and its slot is freed; such a request settles as 499, which is not
 *   metered (lib/errors.ts isMetered), once the handler let go of its slot;
 * - once the answer is decided (status, headers and the whole body in hand, the handler's slot
 *   free), one outcome — status, error code, cache — handed to the settler, the metrics and the
 *   access log, before the answer's first byte leaves. The answer waits for that settle, so a
 *   caller that sends its next call as soon as it has this answer finds its concurrency place
 *   free (spec Part 3), and no reader, however slow, outlives its lease unmetered;
 * - the trace context the edge sent (`traceparent`, docs/operations.md "Telemetry"), so the render's spans and the
 *   settle call join the request's trace.
 */
import { ROOT_CONTEXT, context, propagation } from '@opentelemetry/api';
import type { Middleware, ParameterizedContext } from 'koa';
import { ServiceError } from '../../lib/errors.ts';
import type { LeaseClaims } from '../../lib/lease.ts';
import { ATTEMPT_HEADER, LEASE_HEADER, OPERATIONS, leavesLeaseOpen, operationFor, type ClaimResult, type SettleRequest } from '../../lib/policy-contract.ts';
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
  /** A 503 the edge may retry on another renderer: the claim is given back for it, unsettled here. */
  leaseLeftOpen: boolean;
  state: RendererState;
}

export function requestScope(options: {
  now: () => number;
  /** The claims of a lease signed by policy's private key, or undefined. */
  verifyLease: (token: string) => LeaseClaims | undefined;
  /** Claims the lease at policy for this attempt; throws when policy cannot answer. */
  claimLease: (token: string) => Promise<ClaimResult>;
  /** Turns what the handler threw into its answer, so the answer settled is the one sent. */
  answerError: (ctx: ParameterizedContext<RendererState>, err: unknown) => void;
  /** Called once per leased request on arrival; onAnswered follows exactly once. */
  onAccepted?: () => void;
  /** Takes the outcome; the answer leaves once the promise it returns resolves. */
  onAnswered: (a: Answered) => Promise<void>;
}): Middleware<RendererState> {
  return async (ctx, next) => {
    const traced = propagation.extract(ROOT_CONTEXT, ctx.headers);
    const controller = new AbortController();
    ctx.state.signal = controller.signal;
    ctx.state.startedAt = options.now();
    const operation = operationFor(ctx.path);
    if (operation !== undefined) ctx.state.operation = operation;
    // Every path needs a lease for exactly the route it names; nothing on this port is open
    // (docs/architecture.md §4). A path that names no route, or another route's, is 401 here.
    const lease = ctx.get(LEASE_HEADER);
    const claims = options.verifyLease(lease);
    if (claims === undefined || operation === undefined || claims.operation !== operation || claims.expiresAt <= options.now()) {
      throw new ServiceError('unauthorized');
    }
    // Single use: only the attempt that claims the lease does any work; the others did none and
    // settle nothing, since the lease is another attempt's.
    let claim: ClaimResult;
    try {
      claim = await context.with(traced, () => options.claimLease(lease));
    } catch {
      throw new ServiceError('busy');
    }
    if (claim === 'held') throw new ServiceError('busy');
    if (claim === 'spent') throw new ServiceError('unauthorized');

    ctx.state.lease = { token: lease, claims };
    options.onAccepted?.();
    const outcome = (decided: boolean): Answered => {
      const status = decided ? ctx.res.statusCode : CLIENT_CLOSED;
      const render = operation !== undefined && OPERATIONS[operation].render;
      return {
        lease,
        operation,
        status,
        ...(decided && ctx.state.errorCode !== undefined ? { errorCode: ctx.state.errorCode } : {}),
        ...(status === 200 && render && ctx.state.cache !== undefined ? { cache: ctx.state.cache } : {}),
        ...(ctx.state.blocked !== undefined ? { blocked: ctx.state.blocked } : {}),
        durationMs: options.now() - ctx.state.startedAt,
        leaseLeftOpen: decided && leavesLeaseOpen(status, ctx.get(ATTEMPT_HEADER) || undefined),
        state: ctx.state,
      };
    };
    let release!: () => void;
    const handlerDone = new Promise<void>((resolve) => (release = resolve));
    let outcomeTaken = false;
    // The client went away before its answer was decided: stop the render, and settle only
    // once the handler has let go (its slot freed), so the place policy frees is really free.
    ctx.res.once('close', () => {
      if (outcomeTaken) return;
      outcomeTaken = true;
      controller.abort();
      void handlerDone.then(() => context.with(traced, () => options.onAnswered(outcome(false))));
    });
    try {
      await context.with(traced, next);
    } catch (err) {
      options.answerError(ctx, err);
    } finally {
      release();
    }
    if (outcomeTaken) return;
    outcomeTaken = true;
    await context.with(traced, () => options.onAnswered(outcome(true)));
  };
}
