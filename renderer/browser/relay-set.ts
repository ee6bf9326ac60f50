/**
 * A set of relays serving one browser: the refusing proxy for the launch-level
 * `--proxy-server` and one lane relay per prepared browser context. In pod isolation the set
 * lives in the renderer process (this file); in netns isolation it lives in the relay process
 * inside the browser's namespace and is driven over a control socket (netns-launcher.ts).
 */
import type http from 'node:http';
import type net from 'node:net';
import { renderAuthorization } from '../../lib/guard-contract.ts';
import { createLaneRelay, createRefusingProxy, type Dial, type LaneRelay } from './relay.ts';
import { listen } from '../../lib/listen.ts';

/** What a pool needs from its relays, wherever they run. */
export interface RelaySet {
  /** `host:port` of the refusing proxy (Chromium's launch-level `--proxy-server`). */
  readonly refuseAddress: string;
  /** `host:port` of each lane relay; a lane's browser context uses it as its proxy. */
  readonly laneAddresses: readonly string[];
  /** Names the render owning a lane (its token), or none; resolves once the relay applies it. */
  setToken(lane: number, token: string | undefined): Promise<void>;
  /** Settles when the relays stop working (their process died); a browser using them is then useless. */
  readonly lost: Promise<void>;
  close(): Promise<void>;
}

async function listenAt(server: http.Server, host: string, port: number): Promise<string> {
  await listen(server, { port, host });
  return `${host}:${(server.address() as net.AddressInfo).port}`;
}

function closeServer(server: http.Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

/** Relays listening on loopback, in this process. `ports` fixes their ports (0: any free port). */
export async function startRelays(options: {
  lanes: number;
  dial: Dial;
  /** Tunnels one lane may hold open at once (relay.ts createLaneRelay). */
  maxOpenPerLane?: number;
  host?: string;
  refusePort?: number;
  lanePorts?: readonly number[];
}): Promise<RelaySet & { lanesRelays: readonly LaneRelay[] }> {
  const host = options.host ?? '127.0.0.1';
  const refusing = createRefusingProxy();
  const relays = Array.from({ length: options.lanes }, () => createLaneRelay(options.dial, options.maxOpenPerLane));
  const servers = [refusing, ...relays.map((r) => r.server)];
  try {
    const refuseAddress = await listenAt(refusing, host, options.refusePort ?? 0);
    const laneAddresses: string[] = [];
    for (const [i, relay] of relays.entries()) {
      laneAddresses.push(await listenAt(relay.server, host, options.lanePorts?.[i] ?? 0));
    }
    let markLost!: () => void;
    const lost = new Promise<void>((resolve) => (markLost = resolve));
    return {
      refuseAddress,
      laneAddresses,
      lanesRelays: relays,
      lost,
      async setToken(lane, token) {
        const relay = relays[lane];
        if (relay === undefined) throw new RangeError(`no lane ${lane}`);
        relay.setAuthorization(token === undefined ? undefined : renderAuthorization(token));
      },
      async close() {
        for (const r of relays) r.setAuthorization(undefined);
        await Promise.all(servers.map(closeServer));
        markLost();
      },
    };
  } catch (err) {
    await Promise.all(servers.map((s) => (s.listening ? closeServer(s) : Promise.resolve())));
    throw err;
  }
}
