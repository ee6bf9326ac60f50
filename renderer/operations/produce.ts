/**
 * The path every Chromium render takes (spec Part 1, 4.2 to 4.4): judge the page address ▸
 * cache lookup ▸ the key's flight (a render of the same key under way is waited for and its
 * entry served, renderer/cache/flight.ts) ▸ slot ▸ the operation's page work ▸ output bound ▸
 * cache store. The page address is judged before any slot is taken (spec 4.4 rule 3), so a
 * private address costs no browser time; the guard's own checks still run again on every
 * connection Chromium makes.
 */
import { ServiceError, ValidationFailure } from '../../lib/errors.ts';
import type { RenderTally } from '../../lib/guard-contract.ts';
import type { CachedFile, RenderCache } from '../cache/cache.ts';
import type { Span } from '@opentelemetry/api';
import { inSpan, startSpan } from './telemetry.ts';
import { keyedCacheKey, pageAllowedForKey, pageRefusal } from './egress.ts';
import type { EgressAuditSink } from '../browser/index.ts';
import type { RenderContext, RenderLease, RenderPool, Rendered, UrlJudge } from './types.ts';

/** What produce() needs from the server. */
export interface ProduceDeps {
  pool: RenderPool;
  cache: RenderCache;
  judge: UrlJudge;
  maxOutputBytes: number;
  now?: () => number;
  /** Takes the page-address refusal of a leased call, which no guard sees, for the audit trail. */
  egressAudit?: EgressAuditSink;
}

export type RenderOperation = 'screenshot' | 'html-to-image' | 'pdf';

/** One render request, normalised and keyed. */
export interface RenderSpec {
  operation: RenderOperation;
  key: string;
  contentType: string;
  /** The page address to judge first, for `url` forms. */
  url?: string;
  /** Whether a failed render with refused sub-resources answers 422 (spec 4.3 rule 5). */
  refusalFailsRender: boolean;
  /** Epoch ms by which the whole render must be done. */
  deadline: number;
  /** Aborted when the client goes away. */
  signal: AbortSignal;
  /** The call's lease, when it has one (a test may call without). */
  lease?: RenderLease | undefined;
  /** The page work: returns the encoded file. */
  work(ctx: RenderContext): Promise<Buffer>;
}

/** A render_failed, or anything untyped the pool will answer as one. */
function isRenderFailure(err: unknown): boolean {
  if (err instanceof ValidationFailure) return false;
  return !(err instanceof ServiceError) || err.code === 'render_failed';
}

function failedByRefusal(tally: RenderTally | undefined): ServiceError<'url_rejected'> | undefined {
  if (tally === undefined || tally.blocked === 0 || tally.firstReason === null) return undefined;
  return new ServiceError('url_rejected', { reason: tally.firstReason });
}

/** Renders (or serves from cache) one request. Throws ServiceError with the spec's codes. */
export async function produce(deps: ProduceDeps, spec: RenderSpec): Promise<Rendered> {
  return inSpan('render', { 'tintype.operation': spec.operation }, async (span) => {
    if (spec.url !== undefined) {
      const verdict = await deps.judge(spec.url);
      // The key's egress policy after the spec's rules, before the cache: a hit is no way round it.
      const reason = !verdict.ok ? verdict.reason : pageAllowedForKey(spec.url, spec.lease?.claims.egress) ? undefined : 'not_allowed_for_key';
      if (reason !== undefined) {
        if (spec.lease !== undefined) deps.egressAudit?.(spec.lease.token, [pageRefusal(spec.url, reason, spec.lease.claims.egress, deps.now ?? Date.now)], 0);
        throw new ServiceError('url_rejected', { reason });
      }
    }
    const key = keyedCacheKey(spec.key, spec.lease?.claims.egress);
    const lookup = (): Promise<CachedFile | undefined> => inSpan('cache.lookup', {}, async (s) => {
      const hit = await deps.cache.get(key);
      s.setAttribute('tintype.cache', hit === undefined ? 'miss' : 'hit');
      return hit;
    });
    const hit = (cached: CachedFile): Rendered => {
      span.setAttributes({ 'tintype.cache': 'hit', 'tintype.bytes': cached.body.length });
      return { body: cached.body, contentType: cached.contentType, cache: 'hit', blocked: undefined };
    };
    const cached = await lookup();
    if (cached !== undefined) return hit(cached);
    // A render of the same key under way is waited for, and its entry served (renderer/cache/flight.ts).
    const flight = await inSpan('cache.flight', {}, async (s) => {
      const f = await deps.cache.flight(key, { until: spec.deadline, signal: spec.signal });
      s.setAttribute('tintype.flight', f.lead ? 'lead' : 'followed');
      return f;
    });
    try {
      if (!flight.lead) {
        const after = await lookup();
        if (after !== undefined) return hit(after);
      }
      return await renderMiss(deps, spec, key, span);
    } finally {
      await flight.end();
    }
  });
}

/** The page work in a slot, its output bounded and stored under `key` (a miss). */
async function renderMiss(deps: ProduceDeps, spec: RenderSpec, key: string, span: Span): Promise<Rendered> {
  if (spec.signal.aborted) throw new ServiceError('render_failed');

  // slot.wait runs from asking the pool until the page work starts (queue-free: a slot or busy).
  const waiting = startSpan('slot.wait', {});
  let waited = false;
  const endWait = (): void => {
    if (!waited) waiting.end();
    waited = true;
  };
  const { value, tally } = await deps.pool.render({
    deadline: spec.deadline,
    signal: spec.signal,
    ...(spec.lease === undefined ? {} : { lease: spec.lease.token }),
    run: async (ctx) => {
      endWait();
      try {
        return await spec.work(ctx);
      } catch (err) {
        if (isRenderFailure(err)) {
          const tally = await ctx.tally().catch(() => undefined);
          // The guard was full for this render: ours to answer, as a slot is (lib/guard-contract.ts `busy`).
          if ((tally?.busy ?? 0) > 0) throw new ServiceError('busy');
          const refusal = spec.refusalFailsRender ? failedByRefusal(tally) : undefined;
          if (refusal !== undefined) throw refusal;
        }
        throw err;
      }
    },
  }).finally(endWait);

  span.setAttributes({ 'tintype.cache': 'miss', 'tintype.bytes': value.length, 'tintype.blocked': tally.blocked });
  // Spec Part 7: output over the maximum render size is 502 render_too_large, and is not cached.
  if (value.length > deps.maxOutputBytes) throw new ServiceError('render_too_large');
  await inSpan('cache.store', { 'tintype.bytes': value.length }, () =>
    deps.cache.set(key, { body: value, contentType: spec.contentType }));
  return { body: value, contentType: spec.contentType, cache: 'miss', blocked: tally.blocked };
}
