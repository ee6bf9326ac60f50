/**
 * Byte tunnels (CONNECT for TLS and `wss:`, and absolute-form WebSocket upgrades) to a pinned
 * address, with the connect and idle timeouts of docs/architecture.md §7 rule 7. The guard never looks
 * inside: what it judged is the address at the other end.
 */
import type net from 'node:net';
import type { Duplex } from 'node:stream';
import type { DialAddress } from './judge.ts';
import type { Outcome } from './decisions.ts';
import { closeOnError } from '../lib/sockets.ts';
import { armConnectTimeout, type Dial, type UpstreamSettings } from './upstream.ts';

/** Writes a whole HTTP/1.1 answer on a raw socket and closes it (no handler owns the socket). */
export function answerRaw(socket: Duplex, status: number, text: string, headers: Record<string, string> = {}): void {
  if (socket.destroyed || !socket.writable) {
    socket.destroy();
    return;
  }
  const body = `${text}\n`;
  const lines = [
    `HTTP/1.1 ${status} ${STATUS_TEXT[status] ?? 'Error'}`,
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
    'content-type: text/plain; charset=utf-8',
    `content-length: ${Buffer.byteLength(body)}`,
    'cache-control: no-store',
    'connection: close',
  ];
  socket.end(`${lines.join('\r\n')}\r\n\r\n${body}`);
}

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad Request',
  403: 'Forbidden',
  408: 'Request Timeout',
  431: 'Request Header Fields Too Large',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
};

/**
 * Connects to `to` and splices the client socket onto it. `greeting` is written to the client
 * once connected (`200 Connection Established` for CONNECT); `preamble` to the target first
 * (the request head of a WebSocket upgrade). Resolves when both sides are closed.
 */
export function openTunnel(options: {
  client: Duplex;
  head: Buffer;
  to: DialAddress;
  port: number;
  dial: Dial;
  settings: UpstreamSettings;
  greeting?: string;
  preamble?: string;
}): Promise<Outcome> {
  const { client, head, to, port, dial, settings } = options;
  return new Promise((resolve) => {
    let connected = false;
    let upstream: net.Socket;
    try {
      upstream = closeOnError(dial(to.address, port, to.family));
    } catch {
      answerRaw(client, 502, 'upstream unreachable');
      resolve({ decision: 'allowed', status: 502, failure: 'dial_error' });
      return;
    }
    let failure: string | undefined;
    armConnectTimeout(upstream, settings.connectTimeoutMs, () => {
      failure = 'connect_timeout';
      upstream.destroy();
    });
    upstream.on('connect', () => {
      connected = true;
      if (options.preamble !== undefined) upstream.write(options.preamble);
      if (head.length > 0) upstream.write(head);
      if (options.greeting !== undefined) client.write(options.greeting);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    const idle = (): void => {
      failure ??= 'idle_timeout';
      upstream.destroy();
      client.destroy();
    };
    upstream.setTimeout(settings.idleTimeoutMs, idle);
    const clientSocket = client as net.Socket;
    if (typeof clientSocket.setTimeout === 'function') clientSocket.setTimeout(settings.idleTimeoutMs, idle);
    upstream.on('error', (err) => {
      failure ??= (err as NodeJS.ErrnoException).code ?? 'upstream_error';
    });
    client.on('error', () => upstream.destroy());
    let closed = 0;
    const onClose = (): void => {
      closed += 1;
      if (closed === 1) {
        if (!connected) {
          const timedOut = failure === 'connect_timeout';
          upstream.destroy();
          answerRaw(client, timedOut ? 504 : 502, timedOut ? 'upstream timed out' : 'upstream unreachable');
        } else {
          upstream.destroy();
          client.destroy();
        }
      }
      if (closed === 2) {
        resolve({ decision: 'allowed', status: connected ? 200 : failure === 'connect_timeout' ? 504 : 502, failure });
      }
    };
    upstream.once('close', onClose);
    client.once('close', onClose);
  });
}
