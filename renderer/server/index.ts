/**
 * The renderer's HTTP server (docs/architecture.md §1): the /v1 routes behind the edge, and an
 * admin listener on its own port. Wiring only: every part arrives built (pool, cache, settler,
 * judge, OG drawing) so `tintype renderer` and `tintype start` can assemble it their own way.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { requireLeasePublicKeys, type Config } from '../../lib/config.ts';
import { leaseVerifier } from '../../lib/lease.ts';
import type { Lifecycle } from '../../lib/lifecycle.ts';
import type { Logger } from '../../lib/log.ts';
import type { Registry } from '../../lib/metrics.ts';
import { ROLE_MAX_REQUEST_HEADER_BYTES, type Settler } from '../../lib/policy-contract.ts';
import type { RenderCache } from '../cache/cache.ts';
import { createOperations, type RenderPool, type UrlJudge } from '../operations/index.ts';
import type { EgressAuditSink } from '../browser/index.ts';
import { adminHandler, type Drainable } from '../../lib/admin.ts';
import { writeBody } from '../../lib/answers.ts';
import { withTimeout } from '../browser/bounded-wait.ts';
import { answerError, errorAnswers } from './errors.ts';
import { rendererMetrics } from './metrics.ts';
import { ogRoute, type OgDrawing } from './og.ts';
import { requestScope, type Answered } from './request-scope.ts';
import { v1Routes } from './routes.ts';
import type { RendererState } from './state.ts';
import { gracefulClose } from '../../lib/graceful-close.ts';
import { listen } from '../../lib/listen.ts';
import { STATE_PATH, type RendererStateReport } from '../../lib/state-contract.ts';

export { CLIENT_CLOSED } from './request-scope.ts';
export type { OgDrawing } from './og.ts';

/** How long stop() waits, after the listener closed, for the last answers to be settled. */
const STOP_SETTLE_MS = 10_000;
/**
 * The waits between settle attempts; settle is idempotent (docs/architecture.md §2). They span
 * a policy pod's replacement (about 8 s of waits, with each attempt bounded by
 * POLICY_CALL_TIMEOUT_MS), within the lease's grace after the render budget.
 */
const SETTLE_RETRY_MS = [200, 500, 1_000, 2_000, 4_000];
/**
 * How long an answer waits for its settle before it leaves anyway. A settle that fails at
 * first goes on retrying after the answer left (docs/operations.md "Usage ledger").
 */
const SETTLE_WAIT_MS = 1_000;

/**
 * Runs a settle (or a release), retrying a failed attempt as SETTLE_RETRY_MS says. A lease that still cannot be
 * settled expires at policy (render budget + grace) and is recorded unsettled, not metered.
 */
async function withRetry(call: () => Promise<void>): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await call();
    } catch (err) {
      const wait = SETTLE_RETRY_MS[attempt];
      if (wait === undefined) throw err;
      await new Promise((r) => setTimeout(r, wait));
    }
  }
}

/** Default ports of the renderer role (docs/architecture.md §1). */
export const RENDERER_PORT = 8082;
export const RENDERER_ADMIN_PORT = 9082;
/** How long the renderer keeps an idle client connection; an edge drops its idle ones sooner. */
export const RENDERER_KEEP_ALIVE_MS = 65_000;

export interface RendererServerOptions {
  config: Readonly<Config>;
  logger: Logger;
  registry: Registry;
  pool: RenderPool;
  cache: RenderCache;
  settler: Settler;
  judge: UrlJudge;
  // The card type is the OG module's own; the route only passes it between its functions.
  og?: OgDrawing<any>;
  /** Interface to listen on; all interfaces when omitted. */
  host?: string;
  now?: () => number;
  /** Where a leased call's page-address refusal goes for the egress audit trail (the pool sends the guard's decisions). */
  egressAudit?: EgressAuditSink;
}

export interface RendererServer extends Lifecycle, Drainable {
  /** Where the public listener is bound (after start). */
  address(): AddressInfo;
  /** Where the admin listener is bound (after start). */
  adminAddress(): AddressInfo;
  /** The ports it listens on now (none before start). */
  ports(): number[];
}

export function createRendererServer(options: RendererServerOptions): RendererServer {
  const { config, logger, registry, cache, settler } = options;
  const now = options.now ?? Date.now;
  const metrics = rendererMetrics(registry);
  const pool = options.pool;
  metrics.slotsBusy.collect(() => metrics.slotsBusy.set(pool.stats().busy));
  metrics.slotsTotal.collect(() => metrics.slotsTotal.set(pool.stats().slots));
  const operations = createOperations({
    ...(options.egressAudit === undefined ? {} : { egressAudit: options.egressAudit }),
    pool, cache, judge: options.judge, maxOutputBytes: config.maxOutputBytes, renderTimeoutMs: config.renderTimeoutMs, now,
  });
  const pendingSettles = new Set<Promise<void>>();
  // Only a lease policy signed gets any work done; this renderer holds public keys only, so
  // nothing in its pod can mint one (docs/architecture.md §4).
  const leases = leaseVerifier(requireLeasePublicKeys(config));

  const onAnswered = (a: Answered): Promise<void> => {
    const op = a.operation ?? 'unknown';
    if (a.operation !== undefined && a.operation !== 'ping') {
      metrics.renders.inc({ operation: op, outcome: a.status === 200 ? 'ok' : (a.errorCode ?? String(a.status)) });
      metrics.latency.observe(a.durationMs / 1000, { operation: op });
      if (a.cache !== undefined) metrics.cache.inc({ operation: op, result: a.cache });
      if (a.blocked !== undefined && a.blocked > 0) metrics.blocked.inc({ operation: op }, a.blocked);
    }
    // The access line: no URL, HTML or key (docs/architecture.md §6); the OG query is allowed (spec 4.5 rule 7).
    logger.info('request', {
      operation: op, status: a.status, error: a.errorCode, reason: a.state.rejectReason, cache: a.cache,
      blocked: a.blocked, duration_ms: a.durationMs, query: a.state.ogQuery,
    });
    // A 503 the edge retries on another renderer gives the claim back before the answer leaves,
    // so the retry can claim it and settle it (lib/policy-contract.ts leavesLeaseOpen).
    const settling = (a.leaseLeftOpen
      ? withRetry(() => settler.release(a.lease))
      : withRetry(() => settler.settle({
        lease: a.lease, status: a.status,
        ...(a.errorCode !== undefined ? { error: a.errorCode } : {}),
        ...(a.cache !== undefined ? { cache: a.cache } : {}),
      }))
    ).catch((err: unknown) => logger.warn(a.leaseLeftOpen ? 'release.failed' : 'settle.failed', { error: err instanceof Error ? err.message : 'unknown' }));
    pendingSettles.add(settling);
    void settling.finally(() => {
      pendingSettles.delete(settling);
      accepted -= 1;
    });
    // Past the wait the answer leaves; the settle goes on (its own failures are logged above).
    return withTimeout(settling, SETTLE_WAIT_MS).catch(() => undefined);
  };
  // Leased requests between arrival and their settle; stop() waits for them (bounded).
  let accepted = 0;
  const onAccepted = (): void => {
    accepted += 1;
  };

  const app = new Koa<RendererState>();
  app.silent = true; // errorAnswers logs what needs logging; Koa's default would print stacks.
  app.use(errorAnswers(logger));
  app.use(requestScope({
    now, verifyLease: (token) => leases.verify(token), claimLease: (token) => settler.claim(token), answerError: (ctx, err) => answerError(ctx, err, logger), onAccepted, onAnswered,
  }));
  const og = options.og === undefined ? undefined : ogRoute(options.og, cache, config.maxOutputBytes);
  for (const mw of v1Routes(operations, og)) app.use(mw);

  const server = http.createServer({ maxHeaderSize: ROLE_MAX_REQUEST_HEADER_BYTES }, app.callback());
  // The render budget bounds a request.
  server.requestTimeout = config.renderTimeoutMs + 30_000;
  // Set, not left at Node's 5 s: the edge drops an idle upstream connection at 4 s
  // (envoy/edge/upstream.ts UPSTREAM_IDLE_MS), and the side that lets go of an idle
  // connection must be the client, or a request sent as the server closes meets a reset.
  // Headers get a little longer than the idle wait, as Node expects.
  server.keepAliveTimeout = RENDERER_KEEP_ALIVE_MS;
  server.headersTimeout = RENDERER_KEEP_ALIVE_MS + 1_000;
  const closeServer = gracefulClose(server);
  let started = false;
  // Draining from the drain after SIGTERM, or once stop() begins: the operator stops counting this renderer's slots.
  const state = (): RendererStateReport => {
    const stats = pool.stats();
    // A thousandth of a slot is all the decision needs, and keeps the answer short.
    const busyMean = Math.round(stats.busyMean * 1000) / 1000;
    return { slots: stats.slots, busy: stats.busy, busyMean, guard: pool.guardState(), draining: !started || admin.draining(), sandbox: stats.sandbox };
  };
  const admin = adminHandler({
    registries: [registry],
    ready: () => pool.selfTestPassed(),
    routes: { [STATE_PATH]: (_req, res) => writeBody(res, 200, state()) },
    // The drain after SIGTERM: kept-alive connections from the edge leave before the role stops.
    onDrain: () => closeServer.leave(),
  });
  const adminServer = http.createServer(admin);
  const closeAdmin = gracefulClose(adminServer);

  const bound = (s: http.Server): AddressInfo => {
    const a = s.address();
    if (a === null || typeof a === 'string') throw new Error('renderer server is not listening');
    return a;
  };

  return {
    async start() {
      await listen(server, { port: config.port ?? RENDERER_PORT, host: options.host });
      await listen(adminServer, { port: config.adminPort ?? RENDERER_ADMIN_PORT, host: options.host });
      started = true;
      logger.info('renderer.listening', { port: bound(server).port, admin_port: bound(adminServer).port });
    },
    async stop() {
      started = false;
      // In-flight renders finish inside the render budget; past it their connections are cut,
      // which aborts them (settled as client-closed).
      await closeServer(config.renderTimeoutMs);
      const drainBy = Date.now() + STOP_SETTLE_MS;
      while (accepted > 0 && Date.now() < drainBy) await new Promise((r) => setTimeout(r, 20));
      await Promise.allSettled([...pendingSettles]);
      await closeAdmin(1_000);
    },
    healthy: () => started && server.listening,
    drain: admin.drain,
    draining: admin.draining,
    address: () => bound(server),
    adminAddress: () => bound(adminServer),
    ports: () => [server, adminServer].flatMap((s) => {
      const a = s.address();
      return a === null || typeof a === 'string' ? [] : [a.port];
    }),
  };
}
