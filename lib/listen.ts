/** Starting a listener, the one way every role does it. */
import { existsSync } from 'node:fs';
import type { ListenOptions, Server } from 'node:net';

/**
 * Every address of this host, IPv6 and IPv4 alike: `::` (one dual-stack socket) where the kernel
 * has IPv6, else `0.0.0.0`. It is what Node listens on when given no host, spelled out for the
 * listeners whose host is a setting, so an IPv6-only or dual-stack cluster reaches them too.
 */
export const ANY_ADDRESS = existsSync('/proc/net/if_inet6') ? '::' : '0.0.0.0';

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
