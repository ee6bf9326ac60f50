/**
 * The control messages between the renderer and the relay process inside the browser's
 * network namespace: newline-delimited JSON over a unix socket (a path crosses a network
 * namespace; nothing else the renderer offers does).
 */
import type net from 'node:net';
import type { GuardAddress } from './guard-endpoint.ts';

/** The refusing proxy's port inside the namespace: the namespace is private, so a fixed port cannot clash. */
export const NETNS_REFUSE_PORT = 9000;
/** Lane relays listen from here on inside the namespace. */
export const NETNS_FIRST_LANE_PORT = 9001;

export type ToRelay =
  | { t: 'config'; lanes: number; guard: GuardAddress; maxOpenPerLane: number }
  | { t: 'token'; id: number; lane: number; token: string | null };

export type FromRelay =
  | { t: 'ready'; refuse: string; lanes: string[] }
  | { t: 'ack'; id: number }
  | { t: 'log'; level: 'info' | 'warn' | 'error'; event: string; detail?: string };

/** Calls `onMessage` for each JSON line read from `socket`; a malformed line ends the connection. */
export function readMessages<T>(socket: net.Socket, onMessage: (message: T) => void): void {
  let buffered = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    buffered += chunk;
    for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      if (line === '') continue;
      let message: T;
      try {
        message = JSON.parse(line) as T;
      } catch {
        socket.destroy();
        return;
      }
      onMessage(message);
    }
  });
}

/** Writes one message. */
export function send<T>(socket: net.Socket, message: T): void {
  socket.write(JSON.stringify(message) + '\n');
}
