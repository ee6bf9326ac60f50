/**
 * Where a test's target listens when the guard under test is told to let its address through:
 * never on a port the service could share (docs/security.md "The guard").
 */
import { readFileSync } from 'node:fs';
import type { Server } from 'node:net';
import { listen } from '../../lib/listen.ts';

/** Where the kernel's ephemeral ports end, below which bind(0) never picks (`ip_local_port_range`). */
function ephemeralLow(): number {
  try {
    return Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
  } catch {
    return 32768;
  }
}

/**
 * Listens on `address` at a port below the ephemeral range and returns it. The guard refuses a
 * loopback address on every port the service listens on, whatever GUARD_ALLOW_CIDRS opens
 * (docs/security.md "The guard"), and the service's listeners take ports from bind(0), which the
 * kernel may hand out beside a test site's on another address; a site there then looks like the
 * service itself, its fetches refused `denied_host`. Below the range no bind(0) reaches it.
 */
export async function listenBesideService(server: Server, address: string): Promise<number> {
  const high = ephemeralLow();
  const low = high > 20_000 ? 20_000 : 1024;
  for (let tries = 0; ; tries++) {
    const port = low + Math.floor(Math.random() * (high - low));
    try {
      await listen(server, { port, host: address });
      return port;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE' || tries >= 50) throw err;
    }
  }
}
