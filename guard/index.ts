/**
 * The egress guard (docs/architecture.md §1, §2, §7): the forward proxy every browser fetch
 * leaves through, on a TCP port and/or a unix socket, with the Lifecycle of lib/lifecycle.ts.
 * Also the one Judge the renderer uses for page addresses before it takes a slot.
 */
import { existsSync, lstatSync, unlinkSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { KeyObject } from 'node:crypto';
import type { RenderTally } from '../lib/guard-contract.ts';
import { ConfigError, DEFAULT_TUNNELS_PER_RENDER, GUARD_BOUND_DEFAULTS, type Config } from '../lib/config.ts';
import type { Lifecycle } from '../lib/lifecycle.ts';
import { createLogger, type Logger } from '../lib/log.ts';
import type { Registry } from '../lib/metrics.ts';
import { createRecorder, type DecisionRecorder } from './decisions.ts';
import { OPEN_STATUS, RenderEgress } from './egress-policy.ts';
import { leaseVerifier } from '../lib/lease.ts';
import { parseCidr } from './address.ts';
import { Judge } from './judge.ts';
import { createProxyServer, TALLY_SETTLE_MS } from './proxy.ts';
import { createResolver, type Resolve } from './resolver.ts';
import { collectSelf, interfaceAddresses, isRangeEntry } from './self.ts';
import { RenderTallies } from './tally.ts';
import { TunnelBounds } from './tunnel-bounds.ts';
import type { ConnectionLimits } from './connections.ts';
import { RenderTokens } from '../lib/render-token.ts';
import { dialTcp, pinnedAgent, type Dial } from './upstream.ts';
import { ANY_ADDRESS, listen } from '../lib/listen.ts';

export { Judge, judgeUrl, type Judgement, type DialAddress } from './judge.ts';
export { createResolver, DnsFailure, type Resolve } from './resolver.ts';
export type { Dial } from './upstream.ts';

/** How a guard is built; the settings mirror lib/config.ts (GUARD_*). */
export interface GuardOptions {
  /** TCP listen port (0: any free port). Omit to listen on the socket only. */
  port?: number;
  host?: string;
  /** Unix socket path, in addition to or instead of the port. */
  socket?: string;
  dnsServers?: readonly string[];
  dnsTimeoutMs?: number;
  allowCidrs?: readonly string[];
  selfAddresses?: readonly string[];
  /**
   * The ports the rest of the service listens on (asked at each judgement, so listeners started
   * after the guard count). The guard adds its own; at this host's loopback they are `denied_host`.
   */
  servicePorts?: () => Iterable<number>;
  connectTimeoutMs?: number;
  idleTimeoutMs?: number;
  maxTunnels?: number;
  /** Tunnels one render may hold, and all requests naming no render together (tunnel-bounds.ts). */
  maxTunnelsPerRender?: number;
  maxUnnamedTunnels?: number;
  /** Connections held at once, in all and per peer address, and the request timeouts (connections.ts). */
  maxConnections?: number;
  maxConnectionsPerPeer?: number;
  headersTimeoutMs?: number;
  requestTimeoutMs?: number;
  /**
   * What render tokens are checked with (GUARD_TOKEN_KEY, lib/render-token.ts): a token no holder
   * of the key made names no render. A key made now when omitted (a guard in the renderer's process).
   */
  tokens?: RenderTokens;
  logger?: Logger;
  metrics?: Registry;
  /** Seams: the resolver, the dialer, this host's interface addresses. */
  resolve?: Resolve;
  dial?: Dial;
  interfaces?: () => readonly string[];
  /** How long an unfetched render tally is kept, and how many at most. */
  tallyTtlMs?: number;
  maxTallies?: number;
  /** How long stop() lets requests in flight finish before closing them. */
  stopGraceMs?: number;
  /**
   * TINTYPE_LEASE_PUBLIC_KEYS: what a render's lease is checked with when the renderer opens its
   * token (egress-policy.ts). Without them no render can be opened (501), and a renderer fails them.
   */
  leasePublicKeys?: readonly KeyObject[];
}

/**
 * Connections waiting to be accepted, at most (the kernel caps it at net.core.somaxconn). A page
 * opens hundreds of connections at once and several pages render side by side; on a unix socket
 * a full queue refuses the next connection at once (EAGAIN), so the queue is made as deep as the
 * kernel allows, and the relays wait and try again when it is full (renderer/browser/relay.ts).
 */
const ACCEPT_QUEUE = 4096;

/** Proxy port of `tintype guard` on its own (docs/architecture.md §1). */
export const GUARD_PORT = 3128;

/**
 * Where `tintype guard` listens: on PORT when it is set or no GUARD_SOCKET is named (every
 * interface: renderers reach it over the network), and on GUARD_SOCKET when it is set.
 */
export function guardListeners(config: Pick<Config, 'port' | 'guardSocket'>): Pick<GuardOptions, 'port' | 'host' | 'socket'> {
  const port = config.port ?? (config.guardSocket === undefined ? GUARD_PORT : undefined);
  return {
    ...(port === undefined ? {} : { port, host: ANY_ADDRESS }),
    ...(config.guardSocket === undefined ? {} : { socket: config.guardSocket }),
  };
}

/** The GUARD_* settings of lib/config.ts as guard options (listeners, logger and metrics apart). */
export function guardSettings(
  config: Pick<
    Config,
    | 'guardDnsServers'
    | 'guardDnsTimeoutMs'
    | 'guardAllowCidrs'
    | 'guardSelfAddresses'
    | 'guardConnectTimeoutMs'
    | 'guardIdleTimeoutMs'
    | 'guardMaxTunnels'
    | 'guardMaxTunnelsPerRender'
    | 'guardMaxUnnamedTunnels'
    | 'guardMaxConnections'
    | 'guardMaxConnectionsPerPeer'
    | 'guardHeadersTimeoutMs'
    | 'guardRequestTimeoutMs'
    | 'guardTokens'
    | 'leasePublicKeys'
  >,
): GuardOptions {
  return {
    dnsServers: config.guardDnsServers,
    dnsTimeoutMs: config.guardDnsTimeoutMs,
    allowCidrs: config.guardAllowCidrs,
    selfAddresses: config.guardSelfAddresses,
    connectTimeoutMs: config.guardConnectTimeoutMs,
    idleTimeoutMs: config.guardIdleTimeoutMs,
    maxTunnels: config.guardMaxTunnels,
    maxTunnelsPerRender: config.guardMaxTunnelsPerRender,
    maxUnnamedTunnels: config.guardMaxUnnamedTunnels,
    maxConnections: config.guardMaxConnections,
    maxConnectionsPerPeer: config.guardMaxConnectionsPerPeer,
    headersTimeoutMs: config.guardHeadersTimeoutMs,
    requestTimeoutMs: config.guardRequestTimeoutMs,
    ...(config.guardTokens === undefined ? {} : { tokens: config.guardTokens }),
    leasePublicKeys: config.leasePublicKeys,
  };
}

/** A running guard. */
export interface Guard extends Lifecycle {
  /** What makes the render tokens this guard accepts (for a renderer in the same process). */
  readonly tokens: RenderTokens;
  /** Where it listens (after start). */
  address(): { port?: number; host?: string; socket?: string };
  /** One render's refusal tally as recorded now; forgets it. */
  takeTally(token: string): RenderTally;
  /**
   * One render's refusal tally once its requests still being judged have their verdicts
   * (bounded); forgets it. The in-process form of `GET /renders/<token>`.
   */
  settledTally(token: string): Promise<RenderTally>;
  /** Refusals of requests that named no render. */
  unnamedTally(): { blocked: number };
  /** Opens a render's token with its lease: the in-process form of `POST /renders/<token>`; answers its status. */
  openRender(token: string, lease: string): number;
  /** The judge this guard decides with (also for page addresses, spec 4.4 rule 3). */
  judge(): Judge;
}

/**
 * Builds the Judge of a guard's rules: resolver from the DNS settings unless injected, self
 * addresses from the interfaces and GUARD_SELF_ADDRESSES (names resolved now).
 */
export async function createJudge(options: GuardOptions & { logger?: Logger } = {}): Promise<Judge> {
  checkSettings(options);
  const resolve = options.resolve ?? createResolver({ servers: options.dnsServers ?? [], timeoutMs: options.dnsTimeoutMs ?? 5_000 });
  const logger = options.logger ?? createLogger('guard');
  const self = await collectSelf({
    configured: options.selfAddresses ?? [],
    interfaces: (options.interfaces ?? interfaceAddresses)(),
    resolve,
    onUnresolved: (name, code) => logger.warn('guard.self_name_unresolved', { setting: 'GUARD_SELF_ADDRESSES', name, code }),
  });
  return new Judge({
    resolve,
    allowCidrs: options.allowCidrs ?? [],
    self,
    ...(options.servicePorts === undefined ? {} : { ownPorts: options.servicePorts }),
  });
}

/** A bad range or server stops the guard with the name of the setting. */
function checkSettings(options: GuardOptions): void {
  for (const cidr of options.allowCidrs ?? []) {
    try {
      parseCidr(cidr);
    } catch {
      throw new ConfigError('GUARD_ALLOW_CIDRS must list address ranges (a.b.c.d/n, v6::/n or single addresses)');
    }
  }
  for (const entry of (options.selfAddresses ?? []).filter(isRangeEntry)) {
    try {
      parseCidr(entry);
    } catch {
      throw new ConfigError('GUARD_SELF_ADDRESSES must list addresses, address ranges (a.b.c.d/n, v6::/n) or names');
    }
  }
  if (options.resolve === undefined && (options.dnsServers ?? []).length > 0) {
    try {
      createResolver({ servers: options.dnsServers ?? [], timeoutMs: 1_000 });
    } catch {
      throw new ConfigError('GUARD_DNS_SERVERS must list name servers as ip, ip:port or [v6]:port');
    }
  }
}


/** A unix socket left behind by a guard that did not stop cleanly would block listen(). */
function removeStaleSocket(path: string): void {
  if (existsSync(path) && lstatSync(path).isSocket()) unlinkSync(path);
}

export function createGuard(options: GuardOptions): Guard {
  if (options.port === undefined && options.socket === undefined) throw new Error('the guard needs a port or a socket to listen on');
  const logger = options.logger ?? createLogger('guard');
  const settings = {
    connectTimeoutMs: options.connectTimeoutMs ?? 10_000,
    idleTimeoutMs: options.idleTimeoutMs ?? 60_000,
  };
  const maxTunnels = options.maxTunnels ?? 512;
  const connections: ConnectionLimits = {
    maxConnections: options.maxConnections ?? GUARD_BOUND_DEFAULTS.maxConnections,
    maxConnectionsPerPeer: options.maxConnectionsPerPeer ?? GUARD_BOUND_DEFAULTS.maxConnectionsPerPeer,
    headersTimeoutMs: options.headersTimeoutMs ?? GUARD_BOUND_DEFAULTS.headersTimeoutMs,
    requestTimeoutMs: options.requestTimeoutMs ?? GUARD_BOUND_DEFAULTS.requestTimeoutMs,
  };
  const tokens = options.tokens ?? RenderTokens.generate();
  const dial = options.dial ?? dialTcp;
  const tallies = new RenderTallies({ ttlMs: options.tallyTtlMs, maxEntries: options.maxTallies });
  const tunnels = new TunnelBounds({
    maxTunnels,
    maxTunnelsPerRender: options.maxTunnelsPerRender ?? DEFAULT_TUNNELS_PER_RENDER,
    maxUnnamedTunnels: options.maxUnnamedTunnels ?? GUARD_BOUND_DEFAULTS.maxUnnamedTunnels,
  });
  const recorder: DecisionRecorder = createRecorder(logger, options.metrics, () => tunnels.size);
  const keys = options.leasePublicKeys ?? [];
  const egress = new RenderEgress({ ...(keys.length > 0 ? { verifier: leaseVerifier(keys) } : {}), ...(options.metrics === undefined ? {} : { registry: options.metrics }) });
  const servers: http.Server[] = [];
  let agent: http.Agent | undefined;
  let judge: Judge | undefined;
  let running = false;

  return {
    tokens,

    async start() {
      // The guard's own port is the service's too.
      const servicePorts = function* (): Iterable<number> {
        for (const server of servers) {
          const a = server.address();
          if (a !== null && typeof a !== 'string') yield a.port;
        }
        if (options.servicePorts !== undefined) yield* options.servicePorts();
      };
      judge = await createJudge({ ...options, servicePorts, logger });
      agent = pinnedAgent(dial, { ...settings, maxSockets: maxTunnels });
      const ctx = { judge, dial, agent, tallies, egress, recorder, tunnels, tokens, settings, connections };
      try {
        if (options.port !== undefined) {
          const server = createProxyServer(ctx);
          servers.push(server);
          await listen(server, { port: options.port, host: options.host ?? '127.0.0.1', backlog: ACCEPT_QUEUE });
        }
        if (options.socket !== undefined) {
          removeStaleSocket(options.socket);
          const server = createProxyServer(ctx);
          servers.push(server);
          await listen(server, { path: options.socket, backlog: ACCEPT_QUEUE });
        }
      } catch (err) {
        await this.stop();
        throw err;
      }
      running = true;
      const where = this.address();
      logger.info('guard.listening', { port: where.port, host: where.host, socket: where.socket });
    },

    async stop() {
      running = false;
      const grace = options.stopGraceMs ?? 5_000;
      await Promise.all(
        servers.map(
          (server) =>
            new Promise<void>((resolve) => {
              const timer = setTimeout(() => {
                server.closeAllConnections();
                for (const t of tunnels.open) t.destroy();
              }, grace);
              server.close(() => {
                clearTimeout(timer);
                resolve();
              });
              server.closeIdleConnections();
            }),
        ),
      );
      servers.length = 0;
      agent?.destroy();
    },

    healthy() {
      return running && servers.length > 0 && servers.every((s) => s.listening);
    },

    address() {
      const out: { port?: number; host?: string; socket?: string } = {};
      for (const server of servers) {
        const a = server.address();
        if (typeof a === 'string') out.socket = a;
        else if (a !== null) {
          out.port = (a as AddressInfo).port;
          out.host = (a as AddressInfo).address;
        }
      }
      return out;
    },

    takeTally(token) {
      return tallies.take(token);
    },

    async settledTally(token) {
      await tallies.settled(token, TALLY_SETTLE_MS);
      return { ...tallies.take(token), ...egress.takeAudit(token) };
    },

    openRender(token, lease) {
      return tokens.made(token) ? OPEN_STATUS[egress.open(token, lease)] : OPEN_STATUS.forged;
    },

    unnamedTally() {
      return { blocked: tallies.unnamedBlocked() };
    },

    judge() {
      if (judge === undefined) throw new Error('the guard has not started');
      return judge;
    },
  };
}

/**
 * A guard of a renderer's own (docs/architecture.md §3): it listens on a unix socket only, made in
 * a fresh 0700 directory unless GUARD_SOCKET names one. That socket is the one path out of
 * Chromium's namespace, and nobody else's way in; the directory goes with the guard.
 */
export interface PrivateGuard extends Guard {
  /** The socket it listens on. */
  readonly socket: string;
}

export async function createPrivateGuard(options: Omit<GuardOptions, 'port' | 'host'>): Promise<PrivateGuard> {
  const dir = options.socket === undefined ? await mkdtemp(path.join(os.tmpdir(), 'tintype-guard-')) : undefined;
  const socket = options.socket ?? path.join(dir!, 'guard.sock');
  const guard = createGuard({ ...options, socket });
  return {
    socket,
    tokens: guard.tokens,
    start: () => guard.start(),
    async stop(signal) {
      try {
        await guard.stop(signal);
      } finally {
        if (dir !== undefined) await rm(dir, { recursive: true, force: true });
      }
    },
    healthy: () => guard.healthy(),
    address: () => guard.address(),
    takeTally: (token) => guard.takeTally(token),
    settledTally: (token) => guard.settledTally(token),
    unnamedTally: () => guard.unnamedTally(),
    openRender: (token, lease) => guard.openRender(token, lease),
    judge: () => guard.judge(),
  };
}
