/**
 * The forward proxy Chromium's traffic leaves through (docs/architecture.md §2 "guard", §7):
 * absolute-form `http:` requests, `CONNECT host:port` tunnels, absolute-form WebSocket
 * upgrades, and the origin-form `GET /renders/<token>` tally fetch of lib/guard-contract.ts.
 * Every request is judged on its own, also the second and later ones of a kept-alive
 * connection; a refusal is `403` with `x-guard-reason`, and that includes request lines Node's
 * parser throws out before any handler runs.
 */
import http from 'node:http';
import type { Duplex } from 'node:stream';
import { GUARD_REASON_HEADER, refusedRequestName, renderTokenFrom, renderTokenFromPath } from '../lib/guard-contract.ts';
import type { RejectReason } from '../lib/errors.ts';
import { closeOnError, survivesAcceptErrors } from '../lib/sockets.ts';
import type { DecisionRecorder, Outcome, RequestKind } from './decisions.ts';
import { OPEN_STATUS, type RenderEgress } from './egress-policy.ts';
import { RENDER_OPEN_METHOD } from '../lib/egress.ts';
import { LEASE_HEADER } from '../lib/policy-contract.ts';
import { endToEnd } from './headers.ts';
import type { Judge } from './judge.ts';
import type { RenderTokens } from '../lib/render-token.ts';
import { limitConnections } from '../lib/peers.ts';
import { timeoutOptions, type ConnectionLimits } from './connections.ts';
import type { TunnelBounds, TunnelRefusal } from './tunnel-bounds.ts';
import type { RenderTallies } from './tally.ts';
import { failingRequest, isRefused, parseRequestTarget, rawHeader, requestLineOf } from './target.ts';
import { answerRaw, openTunnel } from './tunnel.ts';
import { forward, type Dial, type UpstreamSettings } from './upstream.ts';

/** Everything a proxy listener shares with the others of the same guard. */
export interface ProxyContext {
  judge: Judge;
  dial: Dial;
  agent: http.Agent;
  tallies: RenderTallies;
  /** Renders opened with their lease: their key's egress policy and audit (egress-policy.ts). */
  egress: RenderEgress;
  recorder: DecisionRecorder;
  /** Open tunnels and their bounds (tunnel-bounds.ts). */
  tunnels: TunnelBounds;
  /** What checks that a render's token is one a renderer made (lib/render-token.ts). */
  tokens: RenderTokens;
  settings: UpstreamSettings;
  /** Connections held at once and how long a request may take to arrive (connections.ts). */
  connections: ConnectionLimits;
}

/**
 * How long a read of a render's tally waits for that render's requests still being judged. A
 * judgement waits at most for DNS (GUARD_DNS_TIMEOUT_MS); the renderer gives up a read after 3 s
 * (renderer/browser/guard-endpoint.ts), so the wait ends before that, with what is recorded.
 */
export const TALLY_SETTLE_MS = 2_000;

function refusalBody(reason: RejectReason): string {
  return `guard refused: ${reason}\n`;
}

/** Builds one HTTP listener of the guard; several (TCP port, unix socket) share a context. */
export function createProxyServer(ctx: ProxyContext): http.Server {
  const server = http.createServer({
    // A hostless request must reach the handler to get the guard's 403, not Node's 400.
    requireHostHeader: false,
    keepAliveTimeout: ctx.settings.idleTimeoutMs,
    ...timeoutOptions(ctx.connections),
  });
  limitConnections(server, { max: ctx.connections.maxConnections, perPeer: ctx.connections.maxConnectionsPerPeer });
  // Every connection keeps an error listener for its whole life, also once Node hands it over
  // at a CONNECT or upgrade: a browser resets connections whenever a render is torn down.
  server.on('connection', (socket: Duplex) => closeOnError(socket));
  survivesAcceptErrors(server);

  // The render's record names what was refused, so the renderer can tell its document's refusal
  // from a sub-resource's (lib/guard-contract.ts).
  /** The render a `Proxy-Authorization` names, when its token is one a renderer made; else none. */
  const renderOf = (header: string | undefined): string | undefined => {
    const token = renderTokenFrom(header);
    return token !== undefined && ctx.tokens.made(token) ? token : undefined;
  };

  const refuse = (token: string | undefined, reason: RejectReason, line?: { method: string; target: string }): Outcome => {
    ctx.tallies.refuse(token, reason, line === undefined ? undefined : refusedRequestName(line.method, line.target));
    return { decision: 'refused', reason };
  };

  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const startedAt = performance.now();
    res.on('error', () => res.destroy());
    const url = req.url ?? '';
    const token = renderOf(req.headers['proxy-authorization']);
    const opening = req.method === RENDER_OPEN_METHOD ? renderTokenFromPath(url) : undefined;
    if (opening !== undefined) {
      req.resume();
      const status = ctx.tokens.made(opening) ? OPEN_STATUS[ctx.egress.open(opening, String(req.headers[LEASE_HEADER] ?? ''))] : OPEN_STATUS.forged;
      res.writeHead(status, { 'content-length': 0, 'cache-control': 'no-store' });
      res.end();
      ctx.recorder.record('http', false, { decision: 'other', status, note: 'open' }, startedAt);
      return;
    }
    const stats = req.method === 'GET' ? renderTokenFromPath(url) : undefined;
    if (stats !== undefined) {
      // The render's requests still being judged are waited for: the tally answered is complete.
      void ctx.tallies.settled(stats, TALLY_SETTLE_MS).then(() => {
        const body = JSON.stringify({ ...ctx.tallies.take(stats), ...ctx.egress.takeAudit(stats) });
        res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store', 'content-length': Buffer.byteLength(body) });
        res.end(body);
        ctx.recorder.record('http', token !== undefined, { decision: 'other', status: 200, note: 'tally' }, startedAt);
      });
      return;
    }
    const judging = ctx.tallies.judge(token);
    void (async () => {
      const parsed = parseRequestTarget(req.method ?? 'GET', url);
      // Absolute-form https would ask the guard to speak TLS for the client; browsers use
      // CONNECT for it, so this form is refused as a scheme this proxy does not carry.
      const early = !isRefused(parsed) && parsed.scheme === 'https' ? { ok: false as const, reason: 'bad_scheme' as const } : undefined;
      const judged = await ctx.egress.judge(token, parsed, (p) => ctx.judge.judge(p), early);
      let outcome: Outcome;
      if (!judged.ok) {
        outcome = refuse(token, judged.reason, { method: req.method ?? 'GET', target: url });
        judging();
        const body = refusalBody(judged.reason);
        res.writeHead(403, {
          [GUARD_REASON_HEADER]: judged.reason,
          'content-type': 'text/plain; charset=utf-8',
          'content-length': Buffer.byteLength(body),
          'cache-control': 'no-store',
        });
        res.end(body);
      } else {
        judging();
        outcome = await forward(req, res, judged.target, judged.addresses[0]!, ctx.agent, ctx.settings);
      }
      ctx.recorder.record('http', token !== undefined, outcome, startedAt);
    })().catch(() => res.destroy()).finally(judging);
  });

  const tunnel = (kind: RequestKind, req: http.IncomingMessage, client: Duplex, head: Buffer): void => {
    const startedAt = performance.now();
    const token = renderOf(req.headers['proxy-authorization']);
    const judging = ctx.tallies.judge(token);
    void (async () => {
      const parsed = parseRequestTarget(req.method ?? 'GET', req.url ?? '');
      const early = kind === 'upgrade' && !isRefused(parsed) && parsed.scheme !== 'http' ? { ok: false as const, reason: 'bad_scheme' as const } : undefined;
      const judged = await ctx.egress.judge(token, parsed, (p) => ctx.judge.judge(p), early);
      judging(); // a refusal below is recorded in this same turn, before any waiting read goes on
      let outcome: Outcome;
      let bound: TunnelRefusal | undefined;
      if (!judged.ok) {
        outcome = refuse(token, judged.reason, { method: req.method ?? 'GET', target: req.url ?? '' });
        answerRaw(client, 403, refusalBody(judged.reason).trimEnd(), { [GUARD_REASON_HEADER]: judged.reason });
      } else if ((bound = ctx.tunnels.admit(token, client)) !== undefined) {
        // The guard full is recorded in the render's tally: its render answers busy, not a
        // failure of the page (lib/guard-contract.ts `busy`). A render's or the unnamed bound is
        // the page's own doing.
        if (bound === 'guard') ctx.tallies.full(token);
        answerRaw(client, 503, 'too many open tunnels');
        outcome = { decision: 'other', status: 503, note: `tunnel_bound_${bound}` };
      } else {
        try {
          const target = judged.target;
          outcome = await openTunnel({
            client,
            head,
            to: judged.addresses[0]!,
            port: target.port,
            dial: ctx.dial,
            settings: ctx.settings,
            ...(kind === 'connect'
              ? { greeting: 'HTTP/1.1 200 Connection Established\r\n\r\n' }
              : { preamble: upgradeHead(req, target.path, target.authority) }),
          });
        } finally {
          ctx.tunnels.release(token, client);
        }
      }
      ctx.recorder.record(kind, token !== undefined, outcome, startedAt);
    })().catch(() => client.destroy()).finally(judging);
  };

  server.on('connect', (req: http.IncomingMessage, client: Duplex, head: Buffer) => tunnel('connect', req, client, head));
  server.on('upgrade', (req: http.IncomingMessage, client: Duplex, head: Buffer) => tunnel('upgrade', req, client, head));

  server.on('clientError', (err: NodeJS.ErrnoException & { rawPacket?: Buffer; bytesParsed?: number }, socket: Duplex) => {
    const startedAt = performance.now();
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    if (err.code === 'HPE_HEADER_OVERFLOW') {
      answerRaw(socket, 431, 'request header fields too large');
      return;
    }
    // A head or body that did not arrive in time (connections.ts): dropped, not judged.
    if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
      answerRaw(socket, 408, 'request timed out');
      ctx.recorder.record('malformed', false, { decision: 'other', status: 408, note: 'request_timeout' }, startedAt);
      return;
    }
    const raw = failingRequest(err.rawPacket, err.bytesParsed);
    const line = requestLineOf(raw);
    const token = renderOf(rawHeader(raw, 'proxy-authorization'));
    const judging = ctx.tallies.judge(token);
    // Node refused the request (a `data:` or `javascript:` target, a target with no host,
    // spaces, odd bytes): it cannot be carried, but it still gets the guard's answer (docs/architecture.md
    // §7 rule 6). The same rules judge what can be read of its target, so the reason is the
    // one the rules give it; a target the rules would pass is still no host we can use.
    void (async () => {
      const judged = line === undefined ? undefined : await ctx.judge.judge(parseRequestTarget(line.method, line.target));
      const reason: RejectReason = judged === undefined || judged.ok ? 'bad_host' : judged.reason;
      const outcome = refuse(token, reason, line);
      judging();
      // A pipelined request whose predecessor is still being answered: our answer waits for
      // that one to finish rather than splice into it.
      const answer = (): void => answerRaw(socket, 403, refusalBody(reason).trimEnd(), { [GUARD_REASON_HEADER]: reason });
      const current = responseInFlight(socket);
      if (current === undefined) answer();
      else current.once('finish', answer).once('close', () => socket.destroy());
      ctx.recorder.record('malformed', token !== undefined, outcome, startedAt);
    })().catch(() => socket.destroy()).finally(judging);
  });

  return server;
}

/** The answer to an earlier request the server is still writing on this socket, if any. */
function responseInFlight(socket: Duplex): http.ServerResponse | undefined {
  const current = (socket as Duplex & { _httpMessage?: http.ServerResponse | null })._httpMessage;
  return current !== undefined && current !== null && !current.writableFinished ? current : undefined;
}

/** The request head of an absolute-form WebSocket upgrade, rewritten to origin-form for the target. */
function upgradeHead(req: http.IncomingMessage, path: string, authority: string): string {
  const headers = endToEnd(req.rawHeaders, { host: authority, keep: ['upgrade', 'connection'] });
  const lines = [`${req.method} ${path} HTTP/1.1`];
  for (let i = 0; i < headers.length; i += 2) lines.push(`${headers[i]}: ${headers[i + 1]}`);
  return `${lines.join('\r\n')}\r\n\r\n`;
}
