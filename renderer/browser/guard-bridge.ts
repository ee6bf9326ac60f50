/**
 * netns isolation with a guard known only by `GUARD_URL` (a guard on another host): the relays
 * inside the namespace can reach nothing but a unix socket (docs/architecture.md §1), so the renderer
 * offers one and carries each connection on to the guard's TCP address, byte for byte.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { dialGuard, type GuardAddress } from './guard-endpoint.ts';
import { listen } from '../../lib/listen.ts';

/** A running bridge: the socket path the relays dial. */
export interface GuardBridge {
  readonly path: string;
  close(): Promise<void>;
}

/** Listens on a fresh unix socket and pipes every connection to `target`. */
export async function startGuardBridge(target: GuardAddress): Promise<GuardBridge> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'tintype-guard-bridge-'));
  const socketPath = path.join(dir, 'guard.sock');
  const open = new Set<net.Socket>();
  const track = (s: net.Socket): void => {
    open.add(s);
    s.on('close', () => open.delete(s));
  };
  const server = net.createServer((inner) => {
    track(inner);
    const outer = dialGuard(target);
    track(outer);
    inner.on('error', () => outer.destroy());
    outer.on('error', () => inner.destroy());
    inner.on('close', () => outer.destroy());
    outer.on('close', () => inner.destroy());
    inner.pipe(outer);
    outer.pipe(inner);
  });
  await listen(server, { path: socketPath });
  return {
    path: socketPath,
    async close() {
      for (const s of open) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
      await rm(dir, { recursive: true, force: true });
    },
  };
}
