/**
 * How the pool reaches the guard (docs/architecture.md §2 "guard"): where its proxy listens, and how a
 * render's refusal tally is read back. The guard itself is started by the caller.
 */
import http from 'node:http';
import net from 'node:net';
import { DEFAULT_TUNNELS_PER_RENDER, requireGuardTokens, type Config } from '../../lib/config.ts';
import type { RenderTokens } from '../../lib/render-token.ts';
import { RENDER_OPEN_METHOD, parseAuditEntries } from '../../lib/egress.ts';
import { LEASE_HEADER } from '../../lib/policy-contract.ts';
import { isRejectReason } from '../../lib/errors.ts';
import { REFUSALS_KEPT, renderStatsPath, type RenderTally } from '../../lib/guard-contract.ts';
import type { GuardRoute } from './guard-pins.ts';

/** Where the guard listens and how to read a render's tally. */
export interface GuardEndpoint {
  /**
   * Unix socket of the guard's proxy: the one path out of the namespace in netns isolation. With
   * only `url` there, the pool bridges a socket of its own to it (guard-bridge.ts).
   */
  socketPath?: string;
  /** `http://host:port` of the guard over TCP (pod isolation, `GUARD_URL`). */
  url?: string;
  /**
   * Reads and forgets a render's tally when the guard runs in this process. When absent, the
   * pool asks `GET /renders/<token>` at the guard's listener (lib/guard-contract.ts).
   */
  takeTally?(token: string): RenderTally | Promise<RenderTally>;
  /** Opens a render's token with its lease when the guard runs in this process; answers the status `POST /renders/<token>` would. */
  openRender?(token: string, lease: string): number;
  /** Makes render tokens the guard accepts: its key (GUARD_TOKEN_KEY, or the key of a guard in this process). */
  tokens: RenderTokens;
  /** The guard's bound of tunnels per render (GUARD_MAX_TUNNELS_PER_RENDER): a lane relays no more at once. */
  tunnelsPerRender?: number;
}

/** Tunnels one lane holds open at once: the guard's bound per render. */
export function laneBound(endpoint: GuardEndpoint): number {
  return endpoint.tunnelsPerRender ?? DEFAULT_TUNNELS_PER_RENDER;
}

/** The endpoint named by the settings (`GUARD_SOCKET`, `GUARD_URL`), for a guard started elsewhere. */
export function guardEndpointFromConfig(config: Pick<Config, 'guardSocket' | 'guardUrl' | 'guardTokens' | 'guardMaxTunnelsPerRender'>): GuardEndpoint {
  const endpoint: GuardEndpoint = { tokens: requireGuardTokens(config, 'a renderer using GUARD_URL'), tunnelsPerRender: config.guardMaxTunnelsPerRender };
  if (config.guardSocket !== undefined) endpoint.socketPath = config.guardSocket;
  if (config.guardUrl !== undefined) endpoint.url = config.guardUrl;
  return endpoint;
}

/** A plain description of where a new connection to the guard goes; it can cross a process boundary. */
export type GuardAddress = { path: string } | { host: string; port: number };

/**
 * The address a relay dials. In netns isolation only the unix socket crosses the namespace
 * (docs/architecture.md §1); in pod isolation TCP to GUARD_URL is preferred, the socket otherwise.
 */
export function guardAddress(endpoint: GuardEndpoint, isolation: Config['isolation']): GuardAddress {
  if (isolation === 'netns') {
    if (endpoint.socketPath === undefined) {
      throw new Error('netns isolation needs the guard on a unix socket (GUARD_SOCKET)');
    }
    return { path: endpoint.socketPath };
  }
  if (endpoint.url !== undefined) {
    const u = new URL(endpoint.url);
    return { host: u.hostname.replace(/^\[|\]$/g, ''), port: u.port === '' ? 80 : Number(u.port) };
  }
  if (endpoint.socketPath !== undefined) return { path: endpoint.socketPath };
  throw new Error('the guard endpoint names neither a socket nor a URL');
}

/** Opens a connection to the guard. */
export function dialGuard(address: GuardAddress): net.Socket {
  return 'path' in address ? net.connect({ path: address.path }) : net.connect({ host: address.host, port: address.port });
}

const TALLY_TIMEOUT_MS = 3_000;

/** Reads (and so clears) a render's tally from the guard's `GET /renders/<token>`. Rejects when the guard cannot answer. */
export function fetchTally(address: GuardAddress, token: string): Promise<RenderTally> {
  return new Promise((resolve, reject) => {
    const req = http.get(
      {
        ...('path' in address ? { socketPath: address.path } : { host: address.host, port: address.port }),
        path: renderStatsPath(token),
        agent: false,
        timeout: TALLY_TIMEOUT_MS,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          if (res.statusCode !== 200) return reject(new Error(`guard tally answered ${res.statusCode}`));
          try {
            resolve(parseTally(JSON.parse(Buffer.concat(chunks).toString('utf8'))));
          } catch (err) {
            reject(err as Error);
          }
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error('guard tally timed out')));
    req.on('error', reject);
  });
}

/** Checks the shape of a tally answered by the guard. */
export function parseTally(value: unknown): RenderTally {
  const v = value as Partial<RenderTally> | null;
  if (v === null || typeof v !== 'object' || !Number.isSafeInteger(v.blocked) || (v.blocked as number) < 0) {
    throw new Error('guard tally has no valid blocked count');
  }
  const firstReason = isRejectReason(v.firstReason) ? v.firstReason : null;
  // A guard of a version before the record answers none: then no refusal is known to be the document's.
  const refused = Array.isArray(v.refused)
    ? v.refused
        .filter((r) => typeof r?.request === 'string' && isRejectReason(r.reason))
        .slice(-REFUSALS_KEPT)
        .map((r) => ({ request: r.request, reason: r.reason }))
    : [];
  const tally: RenderTally = { blocked: v.blocked as number, firstReason, refused };
  // A render opened with its lease: the guard's decisions for the audit trail (lib/egress.ts).
  if (Array.isArray(v.audit)) tally.audit = parseAuditEntries(v.audit);
  if (Number.isSafeInteger(v.auditDropped) && (v.auditDropped as number) >= 0) tally.auditDropped = v.auditDropped as number;
  if (Number.isSafeInteger(v.busy) && (v.busy as number) > 0) tally.busy = v.busy as number;
  return tally;
}

/** Opens a render's token with its lease at the guard (`POST /renders/<token>`); resolves with the status. */
export function openAt(address: GuardAddress, token: string, lease: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        ...('path' in address ? { socketPath: address.path } : { host: address.host, port: address.port }),
        method: RENDER_OPEN_METHOD,
        path: renderStatsPath(token),
        headers: { [LEASE_HEADER]: lease, 'content-length': 0 },
        agent: false,
        timeout: TALLY_TIMEOUT_MS,
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error('guard open timed out')));
    req.on('error', reject);
    req.end();
  });
}

/** A guard that answered, but did not open the render: it holds no lease public key, or not the one that signed. */
export class RenderNotOpened extends Error {
  override name = 'RenderNotOpened';
}

/** How a pool opens a render at its guard: in-process when offered, else over HTTP at the guard the render uses. */
export function renderOpener(endpoint: GuardEndpoint, route: GuardRoute): (token: string, lease: string) => Promise<void> {
  const check = (status: number): void => {
    if (status !== 204) throw new RenderNotOpened(`the guard answered ${status} to opening a render`);
  };
  const open = endpoint.openRender;
  if (open !== undefined) return async (token, lease) => check(open(token, lease));
  return async (token, lease) => check(await openAt(await route.of(token), token, lease));
}

/** The tally reader a pool uses: in-process when offered, else over HTTP from the guard the render used. */
export function tallyReader(endpoint: GuardEndpoint, route: GuardRoute): (token: string) => Promise<RenderTally> {
  const take = endpoint.takeTally;
  if (take !== undefined) return async (token) => parseTally(await take(token));
  return async (token) => fetchTally(await route.of(token), token);
}
