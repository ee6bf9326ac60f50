/**
 * What the guard's tunnels may hold (docs/security.md "The guard", "Capacity"): all of them
 * together (`GUARD_MAX_TUNNELS`), one render's (`GUARD_MAX_TUNNELS_PER_RENDER`), and those of every
 * request naming no render together (`GUARD_MAX_UNNAMED_TUNNELS`). A page that opens hundreds of
 * connections holds its own bound and no more, and a peer without a token holds the unnamed one.
 */
import type { Duplex } from 'node:stream';

export interface TunnelLimits {
  maxTunnels: number;
  maxTunnelsPerRender: number;
  maxUnnamedTunnels: number;
}

/**
 * Why a tunnel was not admitted: the guard is full (`guard`: a render refused so is told busy,
 * lib/guard-contract.ts `busy`), or the render's or the unnamed peers' own bound is reached.
 */
export type TunnelRefusal = 'guard' | 'render' | 'unnamed';

export class TunnelBounds {
  /** Client sockets of open tunnels: closed by the guard's stop(). */
  readonly open = new Set<Duplex>();
  private readonly perRender = new Map<string, number>();
  private unnamed = 0;

  constructor(private readonly limits: TunnelLimits) {}

  /** Takes a place for `client`'s tunnel, or says which bound refuses it; release() gives it back. */
  admit(token: string | undefined, client: Duplex): TunnelRefusal | undefined {
    const held = token === undefined ? this.unnamed : (this.perRender.get(token) ?? 0);
    if (token === undefined && held >= this.limits.maxUnnamedTunnels) return 'unnamed';
    if (token !== undefined && held >= this.limits.maxTunnelsPerRender) return 'render';
    if (this.open.size >= this.limits.maxTunnels) return 'guard';
    this.open.add(client);
    if (token === undefined) this.unnamed += 1;
    else this.perRender.set(token, held + 1);
    return undefined;
  }

  release(token: string | undefined, client: Duplex): void {
    if (!this.open.delete(client)) return;
    if (token === undefined) {
      this.unnamed -= 1;
      return;
    }
    const left = (this.perRender.get(token) ?? 1) - 1;
    if (left > 0) this.perRender.set(token, left);
    else this.perRender.delete(token);
  }

  /** Open tunnels (the `tintype_guard_tunnels_open` gauge). */
  get size(): number {
    return this.open.size;
  }
}
