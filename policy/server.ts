/**
 * Policy's HTTP server (docs/architecture.md §2), two listeners: the edge's, with ext_authz as
 * Envoy's HTTP ext_authz calls it (`/authz` + the client's path, the client's method,
 * `authorization` and `traceparent`, no body); and the renderers', with `POST /claim`,
 * `/release` and `/settle` (docs/architecture.md §4). Each answers only its own paths, so the
 * chart's NetworkPolicy lets Envoy reach only the first and renderers only the second, and the
 * second takes calls only with the renderer token (lib/renderer-token.ts). Both answer
 * `/healthz/live`, `/healthz/ready` and `/metrics`; both bound connections (in all and per peer)
 * and the time headers and body may take.
 *
 * Denials are the exact client answer and always 4xx, because Envoy turns a 5xx from the
 * authorization server into an error of its own. The one 5xx policy gives is the fail-closed
 * `503 busy` when the store cannot answer; docs/operations.md "Policy" says how envoy.yaml carries it to
 * the client.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ROOT_CONTEXT, SpanStatusCode, propagation, trace } from '@opentelemetry/api';
import { LIVE_PATH, METRICS_PATH, READY_PATH } from '../lib/admin.ts';
import { drain, readBody } from '../lib/body.ts';
import type { Config } from '../lib/config.ts';
import { type ErrorAnswer, ServiceError, ValidationFailure } from '../lib/errors.ts';
import type { Lifecycle } from '../lib/lifecycle.ts';
import type { Logger } from '../lib/log.ts';
import { PROMETHEUS_CONTENT_TYPE, type Registry } from '../lib/metrics.ts';
import {
  CLAIM_PATH,
  CLAIM_STATUS,
  EXT_AUTHZ_PREFIX,
  KEY_ID_HEADER,
  LEASE_HEADER,
  OPERATIONS,
  RATELIMIT_LIMIT_HEADER,
  RATELIMIT_REMAINING_HEADER,
  RELEASE_PATH,
  ROLE_MAX_REQUEST_HEADER_BYTES,
  SETTLE_PATH,
  operationFor,
} from '../lib/policy-contract.ts';
import { BadSettle, type Policy, createPolicy } from './authorize.ts';
import { type Clock, systemClock } from './calendar.ts';
import { policyMetrics } from './metrics.ts';
import { type Plans, loadPlans } from './plans.ts';
import { openStore } from './store/open.ts';
import type { PolicyStore } from './store/store.ts';
import { type SchemaWait, waitForSchema } from './store/schema.ts';
import { ConfigError, perPeerConnections, requireLeaseSigningKey, requireRendererToken } from '../lib/config.ts';
import { limitConnections } from '../lib/peers.ts';
import { carriesRendererToken } from '../lib/renderer-token.ts';
import { MAX_LEASE_CHARS, leaseSigner, rememberVerified, type LeaseClaims } from '../lib/lease.ts';
import type { EgressPolicy } from '../lib/egress.ts';
import { gracefulClose } from '../lib/graceful-close.ts';
import { listen } from '../lib/listen.ts';
import { EGRESS_AUDIT_PATH } from '../lib/egress-audit.ts';
import { auditWriter } from './egress-audit.ts';
import { egressPolicies } from './egress.ts';

export const DEFAULT_POLICY_PORT = 8081;
/** Policy's listener for renderers: claim, release and settle (`TINTYPE_POLICY_SETTLE_PORT`). */
export const DEFAULT_POLICY_SETTLE_PORT = 8181;
/** Policy's admin port: metrics, probes and the usage report (docs/operations.md "Reading usage"). */
export const POLICY_ADMIN_PORT = 9081;
/** How long policy keeps an idle client connection; an edge drops its idle ones sooner (the client side lets go first). */
export const POLICY_KEEP_ALIVE_MS = 120_000;
/**
 * How long a request's headers may take, and the whole request with its body (a check, a claim
 * or a settle is under 10 KiB, sent at once): a peer that trickles either is answered 408 and its
 * connection closed (docs/security.md "The meter's walls"). An idle kept-alive connection is
 * timed by POLICY_KEEP_ALIVE_MS instead.
 */
export const POLICY_HEADERS_TIMEOUT_MS = 5_000;
export const POLICY_REQUEST_TIMEOUT_MS = 10_000;
/** A settle, claim or release body: a lease (an egress policy makes it long) and a few fields. */
const SETTLE_BODY_LIMIT = MAX_LEASE_CHARS + 1024;
const SWEEP_EVERY_MS = 1_000;

export interface PolicyServerOptions {
  config: Readonly<Config>;
  logger: Logger;
  registry?: Registry;
  /** Injected for tests; defaults from config. */
  store?: PolicyStore;
  plans?: Plans;
  clock?: Clock;
  /** Listen host; all interfaces by default (Envoy and renderers reach policy over the network). */
  host?: string;
}

export interface PolicyServer extends Lifecycle {
  /** The edge's listener (ext_authz). */
  address(): { port: number };
  /** The renderers' listener (claim, release, settle). */
  settleAddress(): { port: number };
  readonly store: PolicyStore;
  readonly policy: Policy;
  readonly plans: Plans;
  /** Runs one expiry sweep now (the timer runs it every second). */
  sweep(): Promise<number>;
  /**
   * The pod's preStop drain began (lib/admin.ts): both listeners serve on, answering
   * `connection: close`, so the edge's and the renderers' kept-alive connections leave this pod
   * before SIGTERM (lib/graceful-close.ts).
   */
  leave(): void;
}

const tracer = trace.getTracer('tintype');

/** Builds the server; a bad plans file throws a ConfigError naming the field before anything opens. */
export function createPolicyServer(o: PolicyServerOptions): PolicyServer {
  const { config, logger } = o;
  const plans = o.plans ?? loadPlans(config.plansFile);
  // The counters store's ledger sink writes in the background: what it cannot write waits in the stream.
  const store = o.store ?? openStore(config, { logger });
  const clock = o.clock ?? systemClock;
  const metrics = policyMetrics(o.registry);
  const policy = createPolicy({ store, plans, clock, leaseTtlMs: config.renderTimeoutMs + config.leaseGraceMs });
  // Leases go out signed with policy's private key, and are claimed and settled only with a
  // signature a public key in force verifies (docs/architecture.md §4; a settle's is remembered from its claim).
  const leases = rememberVerified(leaseSigner(requireLeaseSigningKey(config), config.leasePublicKeys));
  // Keys' egress policies go into their leases; renders' guard decisions come back for the audit (docs/security.md).
  const egress = egressPolicies(store.egress, logger);
  const audit = auditWriter({ store: store.egress, leases, days: config.egressAuditDays, logger, registry: metrics.registry });
  let started = false;
  let storeOk = false;
  let sweeper: NodeJS.Timeout | undefined;
  let schemaWait: SchemaWait | undefined;
  let sweeping: Promise<number> | undefined;

  const rendererToken = requireRendererToken(config);
  const listener = (route: (req: http.IncomingMessage, res: http.ServerResponse) => Promise<void>): http.Server => {
    const s = http.createServer({
      maxHeaderSize: ROLE_MAX_REQUEST_HEADER_BYTES,
      headersTimeout: POLICY_HEADERS_TIMEOUT_MS,
      requestTimeout: POLICY_REQUEST_TIMEOUT_MS,
      connectionsCheckingInterval: 1_000,
    }, (req, res) => {
      route(req, res).catch((err: unknown) => {
        logger.error('request_failed', { message: err instanceof Error ? err.message : String(err) });
        if (!res.headersSent) send(res, new ServiceError('busy').answer());
        else res.destroy();
      });
    });
    // Envoy and renderers keep connections open; closing one under them would turn a call into an error.
    s.keepAliveTimeout = POLICY_KEEP_ALIVE_MS;
    // No peer takes every descriptor and megabyte (docs/security.md "The meter's walls").
    limitConnections(s, {
      max: config.policyMaxConnections,
      perPeer: perPeerConnections(config.policyMaxConnections),
      onRefused: (over) => metrics.refused.inc({ reason: over === 'peer' ? 'peer_connections' : 'connections' }),
    });
    return s;
  };
  const server = listener(async (req, res) => {
    const url = req.url ?? '/';
    if (url.startsWith(EXT_AUTHZ_PREFIX + '/')) return authz(req, res, url.slice(EXT_AUTHZ_PREFIX.length));
    return common(req, res);
  });
  const renderers = listener(async (req, res) => {
    const path = (req.url ?? '/').split('?', 1)[0];
    const handler = path === SETTLE_PATH ? settle : path === CLAIM_PATH ? claim : path === RELEASE_PATH ? release
      : path === EGRESS_AUDIT_PATH ? audit.handle : undefined;
    if (handler === undefined) return common(req, res);
    // Only a renderer holds the token: anyone else is refused on the headers, the body unread.
    if (!carriesRendererToken(req.headers, rendererToken)) {
      metrics.refused.inc({ reason: 'no_renderer_token' });
      res.shouldKeepAlive = false;
      drain(req, 1_000);
      return send(res, new ServiceError('unauthorized').answer());
    }
    if (req.method !== 'POST') {
      drain(req);
      return send(res, new ServiceError('method_not_allowed').answer());
    }
    return handler(req, res);
  });
  // Each listener's stop, ready before either serves (lib/graceful-close.ts).
  const closers = [server, renderers].map((s) => gracefulClose(s));

  /** The paths both listeners answer: probes and metrics; 404 for anything else. */
  async function common(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?', 1)[0];
    drain(req);
    if (req.method === 'GET' && path === LIVE_PATH) return sendJson(res, 200, { status: 'ok' });
    if (req.method === 'GET' && path === READY_PATH) {
      const ready = started && (await pingStore());
      return sendJson(res, ready ? 200 : 503, { status: ready ? 'ready' : 'unavailable' });
    }
    if (req.method === 'GET' && path === METRICS_PATH) {
      res.writeHead(200, { 'content-type': PROMETHEUS_CONTENT_TYPE });
      res.end(metrics.registry.render());
      return;
    }
    send(res, new ServiceError('not_found').answer());
  }

  async function authz(req: http.IncomingMessage, res: http.ServerResponse, clientPath: string): Promise<void> {
    drain(req); // ext_authz sends no body; anything sent is ignored
    const t0 = performance.now();
    const operation = operationFor(clientPath);
    if (operation === undefined) {
      metrics.checks.inc({ operation: 'none', outcome: 'not_found' });
      return send(res, new ServiceError('not_found').answer());
    }
    if (req.method !== OPERATIONS[operation].method) {
      metrics.checks.inc({ operation, outcome: 'method_not_allowed' });
      return send(res, new ServiceError('method_not_allowed').answer());
    }
    const parent = propagation.extract(ROOT_CONTEXT, req.headers);
    await tracer.startActiveSpan('authz', { attributes: { 'tintype.operation': operation } }, parent, async (span) => {
      let outcome: string;
      try {
        // A key is read from the authorization header only, never from the query (spec Part 5 rule 3).
        await egress.fresh();
        const d = await policy.check(header(req.headers.authorization), operation);
        // A key made since the last read is looked up; if that fails, the lease is withdrawn as a 503 closes it.
        const keyEgress = d.allow ? await egress.of(d.keyId).catch(async (err: unknown) => {
          await policy.settle({ lease: d.leaseId, status: 503 }, d.keyId).catch(() => undefined);
          throw err;
        }) : undefined;
        storeOk = true;
        if (d.allow && (await requesterGone(req, res))) {
          // Its ext_authz timeout passed while the check waited: the edge has answered 503 busy
          // and will never carry this lease, so it is closed now, as a 503 closes it (nothing
          // recorded, its places freed), instead of holding a render place until it expires.
          outcome = 'withdrawn';
          await policy.settle({ lease: d.leaseId, status: 503 }, d.keyId);
          res.destroy();
        } else if (d.allow) {
          outcome = 'granted';
          res.writeHead(200, {
            [LEASE_HEADER]: leases.sign({ id: d.leaseId, keyId: d.keyId, operation, expiresAt: d.expiresAt, ...egressClaim(keyEgress) }),
            [KEY_ID_HEADER]: d.keyId,
            [RATELIMIT_LIMIT_HEADER]: String(d.rate.limit),
            [RATELIMIT_REMAINING_HEADER]: String(d.rate.remaining),
            'content-length': '0',
          });
          res.end();
        } else {
          outcome = d.error.code;
          const a = d.error.answer();
          if (d.rate !== undefined) {
            a.headers[RATELIMIT_LIMIT_HEADER] = String(d.rate.limit);
            a.headers[RATELIMIT_REMAINING_HEADER] = String(d.rate.remaining);
          }
          send(res, a);
        }
        logger.debug('check', { operation, outcome, key: d.allow ? d.keyId : undefined });
      } catch (err) {
        // Fail closed: nothing granted, nothing metered (docs/operations.md "Stores").
        outcome = 'busy';
        storeOk = false;
        metrics.storeErrors.inc();
        span.setStatus({ code: SpanStatusCode.ERROR });
        logger.warn('store_unavailable', { during: 'check', message: err instanceof Error ? err.message : String(err) });
        send(res, new ServiceError('busy').answer());
      }
      span.setAttribute('tintype.outcome', outcome);
      span.end();
      metrics.checks.inc({ operation, outcome });
      metrics.checkSeconds.observe((performance.now() - t0) / 1000, { operation });
    });
  }

  /** The lease of a `{"lease": …}` body, signature checked; answers for it and gives undefined when there is none. */
  async function signedLeaseOf(req: http.IncomingMessage, res: http.ServerResponse): Promise<LeaseClaims | undefined> {
    const read = await readBody(req, { limit: SETTLE_BODY_LIMIT });
    if (read.kind === 'too_large') send(res, new ServiceError('payload_too_large').answer());
    if (read.kind !== 'body') return undefined; // too large, or the renderer went away
    let token: string | undefined;
    try {
      token = leaseOf(JSON.parse(read.body.toString('utf8')));
    } catch {
      token = undefined;
    }
    if (token === undefined) {
      send(res, new ValidationFailure([{ path: 'body', message: 'lease must be a signed lease' }]).answer());
      return undefined;
    }
    const claims = leases.verify(token);
    if (claims === undefined) {
      metrics.claims.inc({ result: 'forged' });
      logger.warn('claim_forged_lease', {});
      send(res, new ServiceError('unauthorized').answer());
    }
    return claims;
  }

  /** Runs one store call for a claim or release; a store that cannot answer is 503 busy (the renderer does nothing). */
  async function claimCall(res: http.ServerResponse, during: string, call: () => Promise<number>): Promise<void> {
    try {
      const status = await call();
      storeOk = true;
      res.writeHead(status, { 'content-length': '0' });
      res.end();
    } catch (err) {
      storeOk = false;
      metrics.storeErrors.inc();
      logger.warn('store_unavailable', { during, message: err instanceof Error ? err.message : String(err) });
      send(res, new ServiceError('busy').answer());
    }
  }

  /** Takes a lease for the one attempt that will use it (docs/architecture.md §4). */
  async function claim(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const lease = await signedLeaseOf(req, res);
    if (lease === undefined) return;
    await claimCall(res, 'claim', async () => {
      const result = await store.claim(lease);
      metrics.claims.inc({ result });
      if (result !== 'claimed') logger.warn('claim_refused', { result, key: lease.keyId });
      return CLAIM_STATUS[result];
    });
  }

  /** Gives a claim back: its attempt answered a 503 the edge retries, having done nothing. */
  async function release(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const lease = await signedLeaseOf(req, res);
    if (lease === undefined) return;
    await claimCall(res, 'release', async () => {
      await store.release(lease);
      metrics.claims.inc({ result: 'released' });
      return 204;
    });
  }

  async function settle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const read = await readBody(req, { limit: SETTLE_BODY_LIMIT });
    if (read.kind === 'too_large') return send(res, new ServiceError('payload_too_large').answer());
    if (read.kind !== 'body') return; // the renderer went away: nobody to answer
    const text = read.body.toString('utf8');
    await tracer.startActiveSpan('settle', {}, propagation.extract(ROOT_CONTEXT, req.headers), async (span) => {
      try {
        let body: unknown;
        try {
          body = JSON.parse(text);
        } catch {
          throw new BadSettle('body must be JSON');
        }
        // Settle takes only a lease this policy signed; the ledger knows it by its id.
        const token = leaseOf(body);
        if (token === undefined) throw new BadSettle('lease must be a signed lease');
        const claims = leases.verify(token);
        if (claims === undefined) {
          metrics.settles.inc({ result: 'forged' });
          span.setAttribute('tintype.settle', 'forged');
          logger.warn('settle_forged_lease', {});
          send(res, new ServiceError('unauthorized').answer());
          return;
        }
        const result = await policy.settle({ ...(body as object), lease: claims.id }, claims.keyId);
        storeOk = true;
        metrics.settles.inc({ result });
        span.setAttribute('tintype.settle', result);
        if (result === 'unknown') {
          logger.warn('settle_unknown_lease', {});
          send(res, new ServiceError('not_found').answer());
        } else {
          res.writeHead(204);
          res.end();
        }
      } catch (err) {
        if (err instanceof BadSettle) {
          metrics.settles.inc({ result: 'bad_request' });
          send(res, new ValidationFailure([{ path: 'body', message: err.message }]).answer());
        } else {
          storeOk = false;
          metrics.storeErrors.inc();
          span.setStatus({ code: SpanStatusCode.ERROR });
          logger.warn('store_unavailable', { during: 'settle', message: err instanceof Error ? err.message : String(err) });
          send(res, new ServiceError('busy').answer());
        }
      } finally {
        span.end();
      }
    });
  }

  async function pingStore(): Promise<boolean> {
    try {
      await store.ping();
      storeOk = true;
    } catch {
      storeOk = false;
    }
    return storeOk;
  }

  async function sweep(): Promise<number> {
    // One sweep at a time; a slow store must not pile them up.
    sweeping ??= policy.expire().finally(() => {
      sweeping = undefined;
    });
    const n = await sweeping;
    if (n > 0) {
      metrics.expiries.inc({}, n);
      logger.info('leases_expired', { count: n });
    }
    return n;
  }

  return {
    store,
    policy,
    plans,
    sweep,
    async start() {
      if (config.migrate === 'wait') {
        schemaWait = waitForSchema(store, logger);
        await schemaWait.done;
      } else {
        await store.migrate();
      }
      // A key on a plan the plans file no longer defines would be refused forever: stop instead.
      const missing = [...new Set((await store.listKeys()).filter((k) => k.revokedAt === null).map((k) => k.plan))]
        .filter((p) => !Object.hasOwn(plans, p));
      if (missing.length > 0) {
        throw new ConfigError(`TINTYPE_PLANS: keys exist on plans that are not defined: ${missing.join(', ')}`);
      }
      await egress.start();
      audit.start();
      await listen(server, { port: config.port ?? DEFAULT_POLICY_PORT, host: o.host });
      // PORT=0 (any free port) asks the same of the renderers' listener unless it is set.
      const settlePort = config.policySettlePort ?? (config.port === 0 ? 0 : DEFAULT_POLICY_SETTLE_PORT);
      await listen(renderers, { port: settlePort, host: o.host });
      sweeper = setInterval(() => {
        sweep().catch((err: unknown) => {
          logger.warn('store_unavailable', { during: 'sweep', message: err instanceof Error ? err.message : String(err) });
        });
      }, SWEEP_EVERY_MS);
      sweeper.unref();
      started = true;
      storeOk = true;
    },
    async stop() {
      started = false;
      schemaWait?.stop();
      if (sweeper !== undefined) clearInterval(sweeper);
      await Promise.all(closers.map((close) => close()));
      await sweeping?.catch(() => 0);
      egress.stop();
      await audit.stop().catch(() => undefined);
      await store.close();
    },
    healthy() {
      return started && storeOk;
    },
    leave() {
      for (const close of closers) close.leave();
    },
    address() {
      return { port: (server.address() as AddressInfo).port };
    },
    settleAddress() {
      return { port: (renderers.address() as AddressInfo).port };
    },
  };
}

/**
 * Whether whoever asked for a check has gone: its connection closed or ended. A requester that
 * gave up closes its connection (the edge's and Envoy's ext_authz timeout), but its close may sit
 * unread behind the request itself: one more turn of the event loop reads it before the grant
 * would be sent.
 */
async function requesterGone(req: http.IncomingMessage, res: http.ServerResponse): Promise<boolean> {
  await new Promise((resolve) => setImmediate(resolve));
  const socket = req.socket;
  return res.destroyed || socket.destroyed || socket.readableEnded || !socket.writable;
}

/** The lease's egress claim for a key's policy, none for a key without one. */
function egressClaim(policy: EgressPolicy | undefined): { egress?: EgressPolicy } {
  return policy === undefined ? {} : { egress: policy };
}

/** The `lease` of a settle body, when it has one. */
function leaseOf(body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const lease = (body as { lease?: unknown }).lease;
  return typeof lease === 'string' ? lease : undefined;
}

function header(v: string | string[] | undefined): string | undefined {
  // Several authorization headers are as malformed as none; the lookup still runs.
  return Array.isArray(v) ? v.join(',') : v;
}

function send(res: http.ServerResponse, a: ErrorAnswer): void {
  const body = JSON.stringify(a.body);
  res.writeHead(a.status, { ...a.headers, 'content-length': String(Buffer.byteLength(body)) });
  res.end(body);
}

function sendJson(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': String(Buffer.byteLength(text)) });
  res.end(text);
}
