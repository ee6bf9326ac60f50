/**
 * Sockets a page can reach the far end of. A browser, or a target, may reset a connection at any
 * moment (a render torn down, a page that opens and drops hundreds of connections); Node turns a
 * reset on a socket with no 'error' listener into an exception that ends the whole process. The
 * relays and the guard give every socket they accept or dial a listener from here, so a reset
 * ends that one connection and nothing else.
 */
import type { Server } from 'node:net';
import type { Duplex } from 'node:stream';

/** Closes `socket` on its first error (ECONNRESET, EPIPE, …), which is then handled. Returns it. */
export function closeOnError<T extends Duplex>(socket: T): T {
  socket.on('error', () => socket.destroy());
  return socket;
}

/**
 * Keeps a listening server alive through accept errors (EMFILE when a page has opened every
 * descriptor the process may have): `onError` is told, the listener goes on accepting.
 */
export function survivesAcceptErrors(server: Server, onError: (err: NodeJS.ErrnoException) => void = () => {}): void {
  server.on('error', (err: NodeJS.ErrnoException) => {
    // A listen error is the caller's (lib/listen.ts rejects with it); after that, accept errors only.
    if (server.listening) onError(err);
  });
}
