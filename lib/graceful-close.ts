/**
 * Stopping an HTTP listener without a kept-alive connection holding it open (docs/helm.md
 * "Rolling restarts"). Node's `server.close()` stops accepting and ends the connections idle at
 * that moment, but a connection busy then is served on, answers `connection: keep-alive`, and a
 * client with steady traffic keeps sending on it: the stop waits until the pod is killed. From the
 * stop on, every answer says `connection: close` (those in flight whose headers are not out yet
 * too), so each client takes its connection elsewhere after the answer it gets, and a connection
 * that went idle after the stop began is ended then.
 *
 * A pod's preStop drain (lib/admin.ts) starts the same answers earlier with `leave()`: the server
 * serves on, but each kept-alive client is told to close after its next answer and opens its next
 * connection to the Service again, which no longer leads to this pod. By SIGTERM, no connection a
 * client used during the drain is left for the stop to end under a request it is sending.
 */
import type http from 'node:http';

/** How `server` stops: `(graceMs?) => Promise`, resolved once every connection has ended. */
export interface GracefulClose {
  (graceMs?: number): Promise<void>;
  /** From now on every answer says `connection: close`, while the server serves on. */
  leave(): void;
}

/**
 * Prepares `server` for a graceful stop (call before it serves) and returns the stop: after
 * `graceMs`, when given, connections still open are cut.
 */
export function gracefulClose(server: http.Server): GracefulClose {
  const answering = new Set<http.ServerResponse>();
  let leaving = false;
  let closing = false;
  const leave = (): void => {
    leaving = true;
    for (const res of answering) if (!res.headersSent) res.setHeader('connection', 'close');
  };
  server.prependListener('request', (_req: http.IncomingMessage, res: http.ServerResponse) => {
    if (leaving) res.setHeader('connection', 'close');
    answering.add(res);
    res.once('close', () => {
      answering.delete(res);
      // An answer sent with its headers before the stop leaves its connection idle now.
      if (closing) setImmediate(() => server.closeIdleConnections());
    });
  });
  const close = (graceMs?: number): Promise<void> => {
    if (!server.listening) return Promise.resolve();
    leave();
    closing = true;
    return new Promise((resolve) => {
      const timer = graceMs === undefined ? undefined : setTimeout(() => server.closeAllConnections(), graceMs);
      server.close(() => {
        clearTimeout(timer);
        resolve();
      });
      server.closeIdleConnections();
    });
  };
  return Object.assign(close, { leave });
}
