/**
 * The embedded edge: the stand-in for the cluster's Envoy (charts/tintype/files/envoy.yaml) in `tintype start` (docs/architecture.md §1).
 * Per request, in the filter order of the chart's Envoy: an announced body over the limit is 413
 * before any key lookup (spec Part 5 rule 5) ▸ ext_authz to policy on the headers (deny:
 * policy's answer as is, the body never held; one without an announced length counted and
 * dropped first, 413 past the limit, spec Part 5 rule 5) ▸ the body, bounded as it arrives (413 past the
 * limit) ▸ route to the renderer with the lease ▸ the rate-limit position on every answer that
 * has one (spec 2.1). `/openapi.json` is
 * public (spec Part 9). Metrics and probes live on the admin listener, never here.
 * What a stranger can hold is bounded (docs/security.md "The meter's walls"): connections, the time headers and
 * body may take (408 `request_timeout`), and no body before its key is checked.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, context as otelContext, propagation, trace } from '@opentelemetry/api';
import type { Context, Span } from '@opentelemetry/api';
import { DEFAULT_RENDER_TIMEOUT_MS } from '../../lib/config.ts';
import { ServiceError } from '../../lib/errors.ts';
import { createLogger, type Logger } from '../../lib/log.ts';
import type { Lifecycle } from '../../lib/lifecycle.ts';
import { Registry } from '../../lib/metrics.ts';
import { MAX_BODY_BYTES, operationFor } from '../../lib/policy-contract.ts';
import { createAuthzClient, type AuthzDecision } from './authz.ts';
import { writeError, writeMethodNotAllowed, writeNotFound, type Headers } from '../../lib/answers.ts';
import { announcedTooLarge, drain, readBody } from '../../lib/body.ts';
import {
  IDLE_TIMEOUT_MS, LOCAL_REPLIES, MAX_CONNECTIONS, OPENAPI_PATH, REQUEST_TIMEOUT_MS, REQUEST_HEADERS_TIMEOUT_MS, ROUTED_PREFIX, UPSTREAM_MARGIN_MS,
} from './contract.ts';
import type { RendererHosts } from './hosts.ts';
import { createUpstream } from './upstream.ts';
import { ANY_ADDRESS, listen } from '../../lib/listen.ts';

export interface EdgeOptions {
  /** Policy's HTTP server, e.g. `http://127.0.0.1:8081`. */
  policyUrl: string;
  /**
   * The renderers: their HTTP servers, e.g. `http://127.0.0.1:8082`, taken in turn; or a host
   * set that follows the cluster's endpoints and health checks as Envoy's does (hosts.ts),
   * started and closed with the edge.
   */
  rendererUrls: readonly string[] | RendererHosts;
  host?: string;
  /** Public port; 0 picks a free one. */
  port?: number;
  /** The OpenAPI document as served at /openapi.json. */
  openapi: Buffer;
  maxBodyBytes?: number;
  /** Envoy's ext_authz `timeout`. */
  authzTimeoutMs?: number;
  /** Render budget; the edge waits this plus a margin for the renderer's answer (Envoy's route timeout). */
  renderTimeoutMs?: number;
  /** Added to the render budget for the whole upstream exchange (Envoy's route timeout). */
  upstreamMarginMs?: number;
  /** Client connections held at most (`TINTYPE_EDGE_MAX_CONNECTIONS`). */
  maxConnections?: number;
  headersTimeoutMs?: number;
  bodyTimeoutMs?: number;
  /** A kept-alive client connection with no request is closed after this long (Envoy's `idle_timeout`). */
  idleTimeoutMs?: number;
  logger?: Logger;
  metrics?: Registry;
}

export interface Edge extends Lifecycle {
  /** The public port, once started. */
  port(): number;
  /** Requests being answered right now. */
  inFlight(): number;
}

const JSON_TYPE = { 'content-type': 'application/json; charset=utf-8' };

/** Trace headers to send on: ours when tracing is on, else the client's passed through (as Envoy does). */
function traceHeaders(ctx: Context, client: http.IncomingHttpHeaders): Headers {
  const carrier: Headers = {};
  propagation.inject(ctx, carrier);
  if (carrier['traceparent'] === undefined && typeof client['traceparent'] === 'string') {
    carrier['traceparent'] = client['traceparent'];
    if (typeof client['tracestate'] === 'string') carrier['tracestate'] = client['tracestate'];
  }
  return carrier;
}

/** The `error` code of a JSON denial body, for span and log fields; never anything else of it. */
function errorCode(body: Buffer): string | undefined {
  try {
    const parsed = JSON.parse(body.toString('utf8')) as { error?: unknown };
    return typeof parsed.error === 'string' ? parsed.error : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The raw answer to a request Node's parser gave up on, with the body both edges give (408 for a
 * slow one, 431 for headers over the limit, 400 for anything else), and the connection closed.
 */
function clientErrorAnswer(code: string | undefined): string {
  const [status, reason] = code === 'ERR_HTTP_REQUEST_TIMEOUT'
    ? [408, 'Request Timeout']
    : code === 'HPE_HEADER_OVERFLOW' ? [431, 'Request Header Fields Too Large'] : [400, 'Bad Request'];
  const body = JSON.stringify(LOCAL_REPLIES[status]);
  return `HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json; charset=utf-8\r\n` +
    `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`;
}

export function createEdge(options: EdgeOptions): Edge {
  const limit = options.maxBodyBytes ?? MAX_BODY_BYTES;
  const log = options.logger ?? createLogger('edge');
  const registry = options.metrics ?? new Registry();
  const requests = registry.counter('tintype_edge_requests_total', 'Answers given by the edge, by operation and status.');
  const latency = registry.histogram('tintype_edge_request_duration_seconds', 'Time from request to complete answer at the edge.');
  const aborts = registry.counter('tintype_edge_client_aborts_total', 'Requests whose client went away before the answer was complete.');
  const authzErrors = registry.counter('tintype_edge_authz_errors_total', 'ext_authz checks policy did not answer (refused, reset, past the timeout), answered 503 busy.');
  authzErrors.inc({}, 0);
  const authz = createAuthzClient(options.policyUrl, options.authzTimeoutMs ?? 2_000);
  const margin = options.upstreamMarginMs ?? UPSTREAM_MARGIN_MS;
  const retries = registry.counter('tintype_edge_upstream_retries_total', 'Requests sent again to a renderer, by reason (connect-failure, reset-before-request, 503), as Envoy\'s upstream_rq_retry.');
  const hostSet = Array.isArray(options.rendererUrls) ? undefined : options.rendererUrls as RendererHosts;
  const upstream = createUpstream(options.rendererUrls, (options.renderTimeoutMs ?? DEFAULT_RENDER_TIMEOUT_MS) + margin, (reason) => retries.inc({ reason }));
  const headersTimeoutMs = options.headersTimeoutMs ?? REQUEST_HEADERS_TIMEOUT_MS;
  const bodyTimeoutMs = options.bodyTimeoutMs ?? REQUEST_TIMEOUT_MS;
  const tracer = trace.getTracer('tintype');
  let inFlight = 0;
  let accepting = false;

  /**
   * After a 413 (or a denial) the rest of the body is dropped as it arrives, for a bounded time, then the
   * socket goes. The connection is not closed at once: a client still writing its body would
   * get a reset instead of reading its 413, even one that sent `connection: close` (so the
   * connection is kept while the rest is read; the client closes it, or the timer does). A
   * client that asked `expect: 100-continue` sends no body after a refusal, so its connection
   * is closed with the answer.
   */
  function refuseTooLarge(req: IncomingMessage, res: ServerResponse, bodyComing = true, headers: Headers = {}): void {
    if (!bodyComing) return writeError(res, new ServiceError('payload_too_large'), { ...headers, connection: 'close' });
    answerBeforeBody(req, res, () => writeError(res, new ServiceError('payload_too_large'), headers));
  }

  /** Answers (`write`) before the body is in (413, a denial, 503 `busy`), then drops the rest as it arrives. */
  function answerBeforeBody(req: IncomingMessage, res: ServerResponse, write: () => void): void {
    if (!req.complete) res.shouldKeepAlive = true;
    write();
    drain(req, 5_000);
  }

  async function routed(req: IncomingMessage, res: ServerResponse, ctx: Context, span: Span): Promise<{ status: number; error?: string }> {
    // The client may go at any moment: while its body is read, while policy is asked, or while
    // the renderer works. Listening from the start, no close goes unseen.
    const gone = new AbortController();
    const clientLeft = (): { status: number } => {
      aborts.inc({ operation: operationFor(req.url ?? '/') ?? 'other' });
      return { status: 499 };
    };
    res.once('close', () => {
      if (!res.writableFinished) gone.abort();
    });
    // 413 on an announced length first, before any key lookup (spec Part 5 rule 5).
    if (announcedTooLarge(req, limit)) {
      refuseTooLarge(req, res);
      return { status: 413, error: 'payload_too_large' };
    }
    // The key is checked on the headers, before a byte of the body is read (docs/security.md "The
    // meter's walls"): a body is only ever a checked caller's memory, bounded by its plan's
    // concurrency, and no unkeyed body can take the room a keyed request needs.
    // Policy's own `authz` span joins this trace through the traceparent sent with the check;
    // the renderer's joins it through the same headers (one edge span is the parent of both).
    const propagated = traceHeaders(ctx, req.headers);
    let decision: AuthzDecision;
    try {
      decision = await authz.check(req.method ?? 'GET', req.url ?? '/', req.headers, propagated, gone.signal);
    } catch (err) {
      // The client left while policy was asked; the check was given up with it.
      if (gone.signal.aborted) return clientLeft();
      // Policy cannot be asked: nobody is refused for it and nothing is leased (Envoy status_on_error).
      authzErrors.inc();
      log.warn('authz_unavailable', { reason: (err as Error).message });
      answerBeforeBody(req, res, () => writeError(res, new ServiceError('busy')));
      return { status: 503, error: 'busy' };
    }
    span.setAttribute('tintype.authz.allowed', decision.allowed);

    if (!decision.allowed) {
      // Spec Part 5 rule 5: a body over the limit is 413 whatever its key. One without an
      // announced length is counted as it arrives and dropped, never held, before the denial.
      if (req.headers['content-length'] === undefined && req.headers['transfer-encoding'] !== undefined) {
        const counted = await readBody(req, { limit, timeoutMs: bodyTimeoutMs, discard: true });
        if (counted.kind === 'too_large') {
          refuseTooLarge(req, res);
          return { status: 413, error: 'payload_too_large' };
        }
        if (counted.kind === 'aborted') return clientLeft();
        if (counted.kind === 'timeout') {
          writeError(res, new ServiceError('request_timeout'), { connection: 'close' });
          return { status: 408, error: 'request_timeout' };
        }
      }
      answerBeforeBody(req, res, () => {
        res.writeHead(decision.status, { ...decision.client, 'content-length': String(decision.body.length) });
        res.end(decision.body);
      });
      const error = errorCode(decision.body);
      return error === undefined ? { status: decision.status } : { status: decision.status, error };
    }

    // A keyed caller's body, bounded as it arrives: a chunked one past the limit is 413. A body
    // that fails here leaves its lease unused, to expire unmetered (docs/security.md "The meter's walls").
    const read = await readBody(req, { limit, timeoutMs: bodyTimeoutMs });
    switch (read.kind) {
      case 'too_large':
        refuseTooLarge(req, res, true, decision.client);
        return { status: 413, error: 'payload_too_large' };
      case 'timeout':
        // Too slow to be anyone's real upload: answered, and the connection goes.
        writeError(res, new ServiceError('request_timeout'), { ...decision.client, connection: 'close' });
        return { status: 408, error: 'request_timeout' };
      case 'aborted':
        return clientLeft();
      case 'body':
        break;
    }

    const outcome = await upstream.forward(req, res, read.body, decision.upstream, decision.client, propagated, gone.signal);
    switch (outcome.kind) {
      case 'answered':
        if (!outcome.complete) span.setAttribute('tintype.edge.incomplete', true);
        return { status: outcome.status };
      case 'client_gone':
        return clientLeft();
      case 'timeout':
        writeError(res, new ServiceError('render_timeout'), decision.client);
        return { status: 504, error: 'render_timeout' };
      case 'unavailable':
        writeError(res, new ServiceError('busy'), decision.client);
        return { status: 503, error: 'busy' };
    }
  }

  function handle(req: IncomingMessage, res: ServerResponse): void {
    const url = req.url ?? '/';
    const path = url.split('?', 1)[0]!;
    if (path === OPENAPI_PATH) {
      if (req.method !== 'GET' && req.method !== 'HEAD') return writeMethodNotAllowed(res, 'GET, HEAD');
      res.writeHead(200, { ...JSON_TYPE, 'content-length': String(options.openapi.length) });
      res.end(req.method === 'HEAD' ? undefined : options.openapi);
      return;
    }
    if (!path.startsWith(ROUTED_PREFIX)) return writeNotFound(res);

    const started = performance.now();
    const operation = operationFor(url) ?? 'other';
    const parent = propagation.extract(ROOT_CONTEXT, req.headers);
    const span = tracer.startSpan('edge', {
      kind: SpanKind.SERVER,
      attributes: { 'tintype.operation': operation, 'http.request.method': req.method ?? 'GET' },
    }, parent);
    const ctx = trace.setSpan(parent, span);
    inFlight += 1;
    otelContext.with(ctx, () => routed(req, res, ctx, span))
      .catch(() => {
        if (!res.headersSent) writeError(res, new ServiceError('busy'));
        else res.destroy();
        return { status: 503, error: 'busy' } as { status: number; error?: string };
      })
      .then((r) => {
        inFlight -= 1;
        const seconds = (performance.now() - started) / 1000;
        requests.inc({ operation, status: String(r.status) });
        latency.observe(seconds, { operation });
        span.setAttribute('http.response.status_code', r.status);
        if (r.error !== undefined) span.setAttribute('tintype.error', r.error);
        if (r.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
        span.end();
        // The og query string is written to the access log (spec 4.5 rule 7); no other query is.
        const query = operation === 'og' && url.includes('?') ? url.slice(url.indexOf('?') + 1) : undefined;
        log.info('request', { operation, status: r.status, error: r.error, ms: Math.round(seconds * 10_000) / 10, query });
      });
  }

  const server = http.createServer({
    headersTimeout: headersTimeoutMs,
    // Node's backstop for a request that is never complete; the body's own timer answers first.
    requestTimeout: headersTimeoutMs + bodyTimeoutMs + 5_000,
    connectionsCheckingInterval: Math.min(1_000, headersTimeoutMs),
    keepAliveTimeout: options.idleTimeoutMs ?? IDLE_TIMEOUT_MS,
  }, handle);
  server.maxConnections = options.maxConnections ?? MAX_CONNECTIONS;
  // Node's own answers to a broken or slow request, with the spec's JSON where it has a code.
  server.on('clientError', (err: NodeJS.ErrnoException, socket: import('node:stream').Duplex) => {
    const inFlightAnswer = (socket as { _httpMessage?: ServerResponse })._httpMessage;
    if (err.code === 'ECONNRESET' || !socket.writable || inFlightAnswer?.headersSent === true) {
      socket.destroy();
      return;
    }
    socket.end(clientErrorAnswer(err.code));
    setTimeout(() => socket.destroy(), 1_000).unref();
  });
  // curl and others ask before sending a large body: a body announced too large is refused unsent.
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    if (announcedTooLarge(req, limit) && (req.url ?? '').startsWith(ROUTED_PREFIX)) {
      refuseTooLarge(req, res, false);
      requests.inc({ operation: operationFor(req.url ?? '/') ?? 'other', status: '413' });
      return;
    }
    res.writeContinue();
    handle(req, res);
  });

  return {
    async start() {
      await hostSet?.start();
      await listen(server, { port: options.port ?? 8080, host: options.host ?? ANY_ADDRESS });
      accepting = true;
      log.info('listening', { port: (server.address() as AddressInfo).port });
    },
    /** Stops accepting, lets answers in flight finish (their renders settle), then closes. */
    async stop() {
      if (!accepting) return;
      accepting = false;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const deadline = Date.now() + (options.renderTimeoutMs ?? DEFAULT_RENDER_TIMEOUT_MS) + margin;
      while (inFlight > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      server.closeAllConnections();
      await closed;
      authz.close();
      upstream.close();
      hostSet?.close();
    },
    healthy: () => accepting,
    port: () => (server.address() as AddressInfo).port,
    inFlight: () => inFlight,
  };
}
