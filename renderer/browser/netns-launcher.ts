/**
 * netns isolation (docs/architecture.md §1): Chromium and its relays run in a network namespace of their
 * own with only loopback up. Puppeteer is given a generated launcher as its executable; the
 * launcher `unshare`s a new network and PID namespace, brings loopback up, starts the relay
 * process (relay-main.ts) without the CDP pipe descriptors, then execs Chromium, which keeps
 * fds 3 and 4 (the pipe) and becomes the namespace's first process. When Chromium dies, the
 * kernel kills and reaps everything else in the namespace: nothing is left behind.
 *
 * Chromium itself goes one step further than the relay: into a mount namespace of its own,
 * jailed (chromium-jail.ts), as an unprivileged user. The relay stays in the renderer's mount
 * namespace, as the renderer's user: it needs the checkout's code, the guard's unix socket
 * (which it dials) and this launch's control socket (the renderer tells it each lane's token).
 * Chromium reaches the relay over the namespace's loopback only.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from '../../lib/log.ts';
import { jailScript, type JailUser } from './chromium-jail.ts';
import type { GuardAddress } from './guard-endpoint.ts';
import { findTool, sh } from './launch-script.ts';
import { NETNS_REFUSE_PORT, readMessages, send, type FromRelay, type ToRelay } from './relay-protocol.ts';
import type { RelaySet } from './relay-set.ts';
import { listen } from '../../lib/listen.ts';
import { sourceModule, typescriptLoader } from '../../lib/modules.ts';

const RELAY_READY_TIMEOUT_MS = 20_000;
const ACK_TIMEOUT_MS = 5_000;

/** A prepared netns launch: give `executablePath` to puppeteer, then await `relays`. */
export interface NetnsLaunch {
  readonly executablePath: string;
  /** The refusing proxy inside the namespace, known before the relay starts (a fixed port). */
  readonly refuseAddress: string;
  /** The relays inside the namespace, once the relay process has reported them listening. */
  readonly relays: Promise<RelaySet>;
  /** Removes the launcher files and the control socket. */
  dispose(): Promise<void>;
}

/** Fails fast when this machine cannot give Chromium a namespace of its own. */
export function netnsTools(): { unshare: string; ip: string } {
  return {
    unshare: findTool(['/usr/bin/unshare', '/bin/unshare']),
    ip: findTool(['/usr/sbin/ip', '/sbin/ip', '/usr/bin/ip', '/bin/ip']),
  };
}

/** The unshare switches of a launch: new network and PID namespaces, and a user namespace when asked. */
export function netnsUnshareFlags(userNamespace: boolean): string[] {
  return [...(userNamespace ? ['--user', '--map-root-user'] : []), '--net', '--pid', '--fork', '--kill-child'];
}

/** Writes the launcher for one browser and opens its control socket. */
export async function prepareNetnsLaunch(options: {
  chromiumPath: string;
  lanes: number;
  guard: GuardAddress;
  /** Tunnels one lane holds open at once (relay.ts createLaneRelay). */
  maxOpenPerLane: number;
  logger: Logger;
  /**
   * Create a user namespace too (mapping this user to root inside it), which lets a renderer
   * that is not root create the network namespace (and Chromium's mount namespace).
   */
  userNamespace: boolean;
  /** Who Chromium runs as in its jail. */
  user: JailUser;
}): Promise<NetnsLaunch> {
  const { unshare, ip } = netnsTools();
  const dir = await mkdtemp(path.join(os.tmpdir(), 'tintype-netns-'));
  const controlPath = path.join(dir, 'control.sock');
  const relayMain = fileURLToPath(sourceModule('./relay-main.ts', import.meta.url));
  const tsx = typescriptLoader();
  const inside = path.join(dir, 'inside.sh');
  const launcher = path.join(dir, 'launch.sh');
  const jail = path.join(dir, 'jail.sh');
  // The jail's root: an empty directory the jail's tmpfs is mounted on, in Chromium's mount namespace only.
  const jailRoot = path.join(dir, 'root');
  await mkdir(jailRoot, { mode: 0o700 });
  await writeFile(jail, jailScript({ root: jailRoot, chromiumPath: options.chromiumPath, user: options.user }), { mode: 0o700 });
  await writeFile(
    inside,
    [
      `${sh(ip)} link set lo up || exit 70`,
      `${sh(process.execPath)}${tsx === undefined ? '' : ` --import ${sh(tsx)}`} ${sh(relayMain)} ${sh(controlPath)} </dev/null 3>&- 4>&- &`,
      `exec ${sh(unshare)} --mount --propagation private -- /bin/sh ${sh(jail)} "$@"`,
      '',
    ].join('\n'),
    { mode: 0o700 },
  );
  await writeFile(
    launcher,
    `#!/bin/sh\nexec ${sh(unshare)} ${netnsUnshareFlags(options.userNamespace).join(' ')} -- /bin/sh ${sh(inside)} "$@"\n`,
    { mode: 0o700 },
  );

  const server = net.createServer();
  await listen(server, { path: controlPath });

  const relays = new Promise<RelaySet>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('relay process did not report ready')), RELAY_READY_TIMEOUT_MS);
    timer.unref();
    server.once('connection', (control: net.Socket) => {
      server.close(); // one relay per launch
      let nextId = 1;
      const pending = new Map<number, { resolve: () => void; reject: (e: Error) => void }>();
      let markLost!: () => void;
      const lost = new Promise<void>((r) => (markLost = r));
      control.on('error', () => control.destroy());
      control.on('close', () => {
        clearTimeout(timer);
        reject(new Error('relay process went away before it was ready'));
        for (const p of pending.values()) p.reject(new Error('relay process went away'));
        pending.clear();
        markLost();
      });
      readMessages<FromRelay>(control, (message) => {
        if (message.t === 'ready') {
          clearTimeout(timer);
          resolve({
            refuseAddress: message.refuse,
            laneAddresses: message.lanes,
            lost,
            setToken(lane, token) {
              if (control.destroyed) return Promise.reject(new Error('relay process went away'));
              const id = nextId++;
              return new Promise<void>((ok, fail) => {
                const t = setTimeout(() => {
                  pending.delete(id);
                  fail(new Error('relay did not acknowledge a token'));
                }, ACK_TIMEOUT_MS);
                pending.set(id, {
                  resolve: () => (clearTimeout(t), ok()),
                  reject: (e) => (clearTimeout(t), fail(e)),
                });
                send<ToRelay>(control, { t: 'token', id, lane, token: token ?? null });
              });
            },
            async close() {
              control.end();
              await lost;
            },
          });
        } else if (message.t === 'ack') {
          pending.get(message.id)?.resolve();
          pending.delete(message.id);
        } else if (message.t === 'log') {
          options.logger[message.level](message.event, { detail: message.detail });
        }
      });
      send<ToRelay>(control, { t: 'config', lanes: options.lanes, guard: options.guard, maxOpenPerLane: options.maxOpenPerLane });
    });
  });
  relays.catch(() => {});

  return {
    executablePath: launcher,
    refuseAddress: `127.0.0.1:${NETNS_REFUSE_PORT}`,
    relays,
    async dispose() {
      server.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
