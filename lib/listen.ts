/** Starting a listener, the one way every role does it. */
import type { ListenOptions, Server } from 'node:net';

/**
 * Resolves once `server` listens on `where` (`{port, host}` or `{path}` for a unix socket);
 * rejects with the listen error (EADDRINUSE, EACCES, …) instead of leaving it unhandled.
 */
export function listen(server: Server, where: ListenOptions): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(where, () => {
      server.off('error', reject);
      resolve();
    });
  });
}
