/**
 * Who is on the other end of a connection, and how many connections one peer may hold on a
 * listener (docs/security.md "The meter's walls"). A listener any pod may reach, or one a
 * compromised browser container shares a network with, would otherwise let one peer take every
 * descriptor and megabyte the role has.
 */
import { isIPv6 } from 'node:net';
import type { Server, Socket } from 'node:net';

/**
 * The holder an address is counted as: an IPv4 address alone, an IPv6 address by its /64 (one
 * client is usually given a whole /64, so it would otherwise have room for every address in it).
 */
export function clientOf(address: string | undefined): string {
  if (address === undefined) return '';
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1]!;
  if (!isIPv6(address)) return address;
  const [head = '', tail = ''] = address.split('::', 2);
  const front = head === '' ? [] : head.split(':');
  const back = tail === '' ? [] : tail.split(':');
  const groups = address.includes('::') ? [...front, ...Array(8 - front.length - back.length).fill('0'), ...back] : front;
  return groups.slice(0, 4).map((g) => g.toLowerCase().replace(/^0+(?=.)/, '')).join(':') + '::/64';
}

export interface ConnectionLimits {
  /** Connections the listener holds at most; one more is closed as it is accepted. */
  max: number;
  /** Of those, connections one peer (clientOf) may hold. */
  perPeer: number;
  /** Told of each connection closed for a limit. */
  onRefused?: (reason: 'total' | 'peer') => void;
}

/** Closes, as it is accepted, a connection past `max` in all or past `perPeer` from its peer. Call before the server listens. */
export function limitConnections(server: Server, limits: ConnectionLimits): void {
  const byPeer = new Map<string, number>();
  let held = 0;
  // Ahead of the HTTP server's own 'connection' listener, so a refused socket is never parsed.
  server.prependListener('connection', (socket: Socket) => {
    // A unix socket's peers have no address: they share the total only.
    const peer = socket.remoteAddress === undefined ? undefined : clientOf(socket.remoteAddress);
    const mine = peer === undefined ? 0 : byPeer.get(peer) ?? 0;
    const over = held >= limits.max ? 'total' : mine >= limits.perPeer ? 'peer' : undefined;
    if (over !== undefined) {
      limits.onRefused?.(over);
      socket.on('error', () => {});
      socket.destroy();
      return;
    }
    held += 1;
    if (peer === undefined) {
      socket.once('close', () => (held -= 1));
      return;
    }
    byPeer.set(peer, mine + 1);
    socket.once('close', () => {
      held -= 1;
      const left = (byPeer.get(peer) ?? 1) - 1;
      if (left > 0) byPeer.set(peer, left);
      else byPeer.delete(peer);
    });
  });
}
