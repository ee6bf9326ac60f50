/**
 * `pod` isolation (docs/security.md "Chromium isolation"; docs/architecture.md §3): in Kubernetes, where Pod
 * Security `restricted` forbids making namespaces, the pod is the namespace and a NetworkPolicy
 * its wall. Chromium shares the renderer's network, uid and PID namespace; its relays run in
 * this process and dial the guard over TCP (`GUARD_URL`), or its socket.
 */
import os from 'node:os';
import { DEFAULT_CHROMIUM_UID } from '../../lib/config.ts';
import type { RenderTally } from '../../lib/guard-contract.ts';
import { chromiumExecutable, launchOptions } from './chromium.ts';
import { dialGuard, guardAddress, tallyReader, type GuardAddress } from './guard-endpoint.ts';
import { decideSandbox, runningAsRoot, type BrowserIsolation, type IsolatedBrowser, type IsolationOptions } from './isolation.ts';
import { startRelays } from './relay-set.ts';
import type { SandboxVerdict } from './sandbox-support.ts';

/** The pod is the namespace: relays in this process, Chromium as the renderer's own user. */
export function createPodIsolation(options: IsolationOptions): BrowserIsolation {
  return new PodIsolation(options);
}

class PodIsolation implements BrowserIsolation {
  readonly mode = 'pod';
  private executable = '';
  private sandbox: SandboxVerdict = { on: false, why: 'not started' };
  private guard: GuardAddress | undefined;
  private tallies: ((token: string) => Promise<RenderTally>) | undefined;

  constructor(private readonly options: IsolationOptions) {}

  async start(): Promise<void> {
    // Chromium shares this process's PID namespace. As PID 1 (a container with no init) this
    // process inherits the children of a Chromium that was killed or crashed, and Node never
    // waits for processes it did not start: they would stay zombies.
    if (process.pid === 1) {
      this.options.logger.warn('browser.no_init', { detail: 'running as PID 1: run the renderer under an init that reaps orphans (tini)' });
    }
    this.executable = chromiumExecutable(this.options.config);
    this.sandbox = decideSandbox(this.options.logger, {
      isolation: 'pod',
      asRoot: runningAsRoot(),
      chromiumUid: this.options.config.chromiumUid ?? DEFAULT_CHROMIUM_UID,
    });
    this.guard = guardAddress(this.options.guard, 'pod');
    this.tallies = tallyReader(this.options.guard, this.guard);
  }

  async launch(): Promise<IsolatedBrowser> {
    // Relays of its own per browser (as in netns): a lane's token belongs to one browser's
    // context, so a replacement preparing its lanes never renames an old browser's render.
    const guard = this.guard!;
    const relays = await startRelays({ lanes: this.options.lanes, dial: () => dialGuard(guard) });
    try {
      const browser = await this.options.launchBrowser(
        launchOptions({ executable: this.executable, refuseProxy: relays.refuseAddress, noSandbox: !this.sandbox.on, home: os.tmpdir() }),
      );
      return { browser, relays };
    } catch (err) {
      await relays.close().catch(() => undefined);
      throw err;
    }
  }

  readTally(token: string): Promise<RenderTally> {
    return this.tallies!(token);
  }

  async stop(): Promise<void> {}
}
