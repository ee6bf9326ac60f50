/**
 * `netns` isolation (docs/security.md "Chromium isolation"; docs/architecture.md §3): each Chromium in
 * network and PID namespaces of its own with only loopback, jailed in a mount namespace as an
 * unprivileged user (netns-launcher.ts, chromium-jail.ts); its relays run inside and reach the
 * guard through one unix socket, bridged to `GUARD_URL` when the guard has no socket here
 * (guard-bridge.ts).
 */
import { DEFAULT_CHROMIUM_UID } from '../../lib/config.ts';
import type { RenderTally } from '../../lib/guard-contract.ts';
import { chromiumExecutable, launchOptions } from './chromium.ts';
import { JAIL_HOME, JAIL_PROFILE_DIR, type JailUser } from './chromium-jail.ts';
import { startGuardBridge, type GuardBridge } from './guard-bridge.ts';
import { guardAddress, laneBound, renderOpener, tallyReader, type GuardAddress } from './guard-endpoint.ts';
import { oneGuard } from './guard-pins.ts';
import { decideSandbox, runningAsRoot, type BrowserIsolation, type IsolatedBrowser, type IsolationOptions } from './isolation.ts';
import { prepareNetnsLaunch } from './netns-launcher.ts';
import { killTree } from './process-tree.ts';
import type { RelaySet } from './relay-set.ts';
import type { SandboxVerdict } from './sandbox-support.ts';

/**
 * A namespace per browser. `userNamespace`: make the namespaces in a user namespace, so a
 * renderer that is not root can (default: exactly when not running as root).
 */
export function createNetnsIsolation(options: IsolationOptions & { userNamespace?: boolean }): BrowserIsolation {
  return new NetnsIsolation(options, options.userNamespace ?? !runningAsRoot());
}

class NetnsIsolation implements BrowserIsolation {
  readonly mode = 'netns';
  /** Who Chromium runs as in its jail. */
  private readonly user: JailUser;
  private executable = '';
  private sandbox: SandboxVerdict = { on: false, why: 'not started' };
  /** The guard's unix socket as the relays inside dial it. */
  private guard: GuardAddress | undefined;
  private tallies: ((token: string) => Promise<RenderTally>) | undefined;
  private opener: ((token: string, lease: string) => Promise<void>) | undefined;
  private bridge: GuardBridge | undefined;

  constructor(
    private readonly options: IsolationOptions,
    private readonly userNamespace: boolean,
  ) {
    const uid = options.config.chromiumUid ?? DEFAULT_CHROMIUM_UID;
    this.user = { kind: userNamespace ? 'nested' : 'uid', uid, gid: uid };
  }

  async start(): Promise<void> {
    const logger = this.options.logger;
    this.executable = chromiumExecutable(this.options.config);
    // The probe runs as the user Chromium becomes: its own uid when the renderer is root.
    this.sandbox = decideSandbox(logger, { isolation: 'netns', asRoot: !this.userNamespace, chromiumUid: this.user.uid });
    if (this.userNamespace) {
      logger.warn('browser.shared_uid', {
        detail: "the renderer is not root: Chromium runs as the renderer's own uid (in user namespaces of its own), not as a uid of its own",
      });
    }
    const endpoint = this.options.guard;
    if (endpoint.socketPath === undefined && endpoint.url !== undefined) {
      // Only a unix socket crosses the namespace: bridge one to the guard's TCP address.
      const tcp = guardAddress(endpoint, 'pod');
      this.bridge = await startGuardBridge(tcp);
      this.guard = { path: this.bridge.path };
      this.tallies = tallyReader(endpoint, oneGuard(tcp));
      this.opener = renderOpener(endpoint, oneGuard(tcp));
    } else {
      this.guard = guardAddress(endpoint, 'netns');
      this.tallies = tallyReader(endpoint, oneGuard(this.guard));
      this.opener = renderOpener(endpoint, oneGuard(this.guard));
    }
  }

  async launch(): Promise<IsolatedBrowser> {
    const netns = await prepareNetnsLaunch({
      chromiumPath: this.executable,
      lanes: this.options.lanes,
      guard: this.guard!,
      maxOpenPerLane: laneBound(this.options.guard),
      logger: this.options.logger,
      userNamespace: this.userNamespace,
      user: this.user,
    });
    let browser;
    try {
      browser = await this.options.launchBrowser(
        launchOptions({
          executable: this.executable,
          launcher: netns.executablePath,
          refuseProxy: netns.refuseAddress,
          noSandbox: !this.sandbox.on,
          home: JAIL_HOME,
          // The profile is in the jail's own /tmp, in memory, gone with the namespace.
          userDataDir: JAIL_PROFILE_DIR,
        }),
      );
    } catch (err) {
      await netns.dispose();
      throw err;
    }
    let relays: RelaySet;
    try {
      relays = await netns.relays;
    } catch (err) {
      const pid = browser.process()?.pid ?? 0;
      if (pid > 0) killTree(pid);
      await netns.dispose();
      throw err;
    }
    void browser.process()?.once('exit', () => void netns.dispose());
    return { browser, relays };
  }

  sandboxOn(): boolean {
    return this.sandbox.on;
  }

  readTally(token: string): Promise<RenderTally> {
    return this.tallies!(token);
  }

  openRender(token: string, lease: string): Promise<void> {
    return this.opener!(token, lease);
  }

  async stop(): Promise<void> {
    await this.bridge?.close();
  }
}
