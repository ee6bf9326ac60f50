/**
 * Reaching a target that passed (docs/architecture.md §7 rules 5 and 7): the dialer only ever receives an
 * address the judge kept, never a name, and nothing looks the name up again. Plain HTTP goes
 * through one keep-alive agent whose pools are keyed by that pinned address and port, so a
 * reused connection always leads to an address that was judged for this very request.
 */
import http from 'node:http';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import type { DialAddress } from './judge.ts';
import { GUARD_FAILURE_HEADER, GUARD_REASON_HEADER, type GuardFailure } from '../lib/guard-contract.ts';
import { endToEnd } from './headers.ts';
import type { Target } from './target.ts';
import type { Outcome } from './decisions.ts';
import { closeOnError } from '../lib/sockets.ts';

/** Opens a TCP connection to an address (never a name). The seam tests replace. */
export type Dial = (address: string, port: number, family: 4 | 6) => net.Socket;

/**
 * The real dialer. Nagle's algorithm is off: the guard relays what the browser wrote as it
 * arrives, and holding small writes back for an ACK only adds latency to every exchange.
 */
export const dialTcp: Dial = (address, port, family) => net.connect({ host: address, port, family, noDelay: true });

/** Timeouts of the upstream side (settings GUARD_CONNECT_TIMEOUT_MS, GUARD_IDLE_TIMEOUT_MS). */
export interface UpstreamSettings {
  connectTimeoutMs: number;
  idleTimeoutMs: number;
}

/** A keep-alive agent that opens its connections with `dial`, bounded to `maxSockets` in all. */
export function pinnedAgent(dial: Dial, settings: UpstreamSettings & { maxSockets: number }): http.Agent {
  const agent = new http.Agent({
    keepAlive: true,
    maxTotalSockets: settings.maxSockets,
    timeout: settings.idleTimeoutMs,
  });
  agent.createConnection = (options): Duplex =>
    closeOnError(dial(String(options.host), Number(options.port), options.family === 6 ? 6 : 4));
  return agent;
}

/** Destroys a request whose socket has not connected within the connect timeout. */
export function armConnectTimeout(socket: net.Socket, ms: number, onTimeout: () => void): void {
  if (!socket.connecting) return;
  const timer = setTimeout(onTimeout, ms);
  socket.once('connect', () => clearTimeout(timer));
  socket.once('close', () => clearTimeout(timer));
}

class UpstreamTimeout extends Error {
  constructor(readonly phase: 'connect' | 'idle') {
    super(`upstream ${phase} timeout`);
  }
}

/** The guard's name for an upstream error (lib/guard-contract.ts `x-guard-failure`). */
export function failureOf(err: Error): GuardFailure {
  if (err instanceof UpstreamTimeout) return err.phase === 'connect' ? 'connect_timeout' : 'idle_timeout';
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ECONNREFUSED') return 'connect_refused';
  if (code === 'ECONNRESET' || code === 'EPIPE' || code === 'ECONNABORTED') return 'reset';
  return 'unreachable';
}

/**
 * Forwards one absolute-form request to the pinned address and streams the answer back.
 * Resolves with the outcome once the exchange is over (502 when the target cannot be reached,
 * 504 when it does not connect or answer in time). Those answers are the guard's own and say so
 * in `x-guard-failure`, so a renderer never takes them for the target's page.
 */
export function forward(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  target: Target,
  to: DialAddress,
  agent: http.Agent,
  settings: UpstreamSettings,
): Promise<Outcome> {
  return new Promise((resolve) => {
    let settled = false;
    const done = (outcome: Outcome): void => {
      if (!settled) {
        settled = true;
        resolve(outcome);
      }
    };
    const upstream = http.request({
      host: to.address,
      family: to.family,
      port: target.port,
      method: req.method,
      path: target.path,
      headers: endToEnd(req.rawHeaders, { host: target.authority }),
      setHost: false,
      agent,
    });
    upstream.on('socket', (socket) => {
      armConnectTimeout(socket, settings.connectTimeoutMs, () => upstream.destroy(new UpstreamTimeout('connect')));
    });
    upstream.setTimeout(settings.idleTimeoutMs, () => upstream.destroy(new UpstreamTimeout('idle')));
    upstream.on('error', (err) => {
      const timedOut = err instanceof UpstreamTimeout;
      const failure = timedOut ? `${err.phase}_timeout` : ((err as NodeJS.ErrnoException).code ?? 'upstream_error');
      if (!res.headersSent) {
        const status = timedOut ? 504 : 502;
        res.writeHead(status, {
          [GUARD_FAILURE_HEADER]: failureOf(err),
          'content-type': 'text/plain; charset=utf-8',
          'cache-control': 'no-store',
          connection: 'close',
        });
        res.end(status === 504 ? 'upstream timed out\n' : 'upstream unreachable\n');
        done({ decision: 'allowed', status, failure });
      } else {
        res.destroy();
        done({ decision: 'allowed', status: res.statusCode, failure });
      }
    });
    upstream.on('response', (answer) => {
      // `x-guard-reason` and `x-guard-failure` are the guard's word alone (docs/architecture.md §7 rule 6): a
      // target sending one would pass for a refusal or an unreachable target, so the target's
      // own (any spelling of the name) are dropped.
      res.writeHead(
        answer.statusCode ?? 502,
        answer.statusMessage,
        endToEnd(answer.rawHeaders, { drop: [GUARD_REASON_HEADER, GUARD_FAILURE_HEADER] }),
      );
      answer.pipe(res);
      answer.on('error', () => res.destroy());
    });
    res.on('finish', () => done({ decision: 'allowed', status: res.statusCode }));
    res.on('close', () => {
      if (!res.writableFinished) {
        upstream.destroy();
        done({ decision: 'allowed', status: res.statusCode, failure: 'client_closed' });
      }
    });
    req.pipe(upstream);
  });
}
