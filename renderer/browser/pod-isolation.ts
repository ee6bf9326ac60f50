/**
 * `pod` isolation (docs/security.md "Chromium isolation"; docs/architecture.md §3): in Kubernetes, where Pod
 * Security `restricted` forbids making namespaces, Chromium runs in a container of its own in the
 * renderer's pod: another uid, no shared PID namespace, no secret in its environment or mounts,
 * nothing of the renderer's in its filesystem. A launcher there (launcher/main.ts) starts one
 * Chromium per connection on its unix socket, in an emptyDir both containers mount, and CDP
 * crosses on that socket (socket-transport.ts). The relays stay in this process and dial the guard
 * over TCP (`GUARD_URL`), or its socket; the pod's NetworkPolicy is the network wall, and Chromium
 * reaches the pod's loopback, where the relays listen. Each render keeps to one guard of the
 * several `GUARD_URL` may name (guard-pins.ts).
 *
 * With no `TINTYPE_BROWSER_SOCKET` (one machine, tests) the renderer starts the launcher itself,
 * as its own child on a private socket: the same program and the same transport, without the
 * container's walls.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import puppeteer from 'puppeteer-core';
import { renderTokenFrom, type RenderTally } from '../../lib/guard-contract.ts';
import { sourceModule, typescriptLoader } from '../../lib/modules.ts';
import { chromiumArgs } from './launcher/switches.ts';
import { dialGuard, guardAddress, laneBound, renderOpener, tallyReader } from './guard-endpoint.ts';
import { guardRoute, type GuardRoute } from './guard-pins.ts';
import type { BrowserIsolation, IsolatedBrowser, IsolationOptions } from './isolation.ts';
import type { SandboxVerdict } from './launcher/sandbox.ts';
import { startRelays, type RelaySet } from './relay-set.ts';
import { connectSocketBrowser, maxFrameBytes } from './socket-transport.ts';

/** How long the renderer waits for a launcher to listen (its own, or the browser container's). */
const LAUNCHER_READY_TIMEOUT_MS = 60_000;
const LAUNCHER_STOP_TIMEOUT_MS = 5_000;
const LAUNCHER_POLL_MS = 100;

/** The pod's browser container (or a launcher of this process's own): relays here, Chromium there. */
export function createPodIsolation(options: IsolationOptions): BrowserIsolation {
  return new PodIsolation(options);
}

/**
 * The switches the launcher is asked for: puppeteer's defaults and the walls' own. Headless mode,
 * profile, pipe and sandbox are the launcher's to decide.
 */
export function browserSwitches(refuseProxy: string): string[] {
  return puppeteer
    .defaultArgs({ headless: true, args: chromiumArgs({ refuseProxy, noSandbox: false }) })
    .filter((a) => a.startsWith('--') && !a.startsWith('--headless'));
}

class PodIsolation implements BrowserIsolation {
  readonly mode = 'pod';
  private route: GuardRoute | undefined;
  private tallies: ((token: string) => Promise<RenderTally>) | undefined;
  private opener: ((token: string, lease: string) => Promise<void>) | undefined;
  private socketPath = '';
  /** The launcher this process started (no TINTYPE_BROWSER_SOCKET), and its private directory. */
  private local: { child: ChildProcess; dir: string; exited: Promise<void> } | undefined;
  private verdict: SandboxVerdict | undefined;

  constructor(private readonly options: IsolationOptions) {}

  async start(): Promise<void> {
    const lookup = this.options.guardLookup;
    this.route = guardRoute(guardAddress(this.options.guard, 'pod'), lookup === undefined ? {} : { lookup });
    this.tallies = tallyReader(this.options.guard, this.route);
    this.opener = renderOpener(this.options.guard, this.route);
    const configured = this.options.config.browserSocket;
    if (configured !== undefined) {
      this.socketPath = configured;
      await this.awaitLauncher(configured);
      return;
    }
    // The launcher's Chromium is then this process's grandchild. As PID 1 (a container with no
    // init) this process inherits the children of a Chromium that was killed or crashed, and
    // Node never waits for processes it did not start: they would stay zombies.
    if (process.pid === 1) {
      this.options.logger.warn('browser.no_init', { detail: 'running as PID 1: run the renderer under an init that reaps orphans (tini)' });
    }
    this.local = await this.startLocalLauncher();
    this.socketPath = path.join(this.local.dir, 'cdp.sock');
  }

  async launch(): Promise<IsolatedBrowser> {
    // Relays of its own per browser (as in netns): a lane's token belongs to one browser's
    // context, so a replacement preparing its lanes never renames an old browser's render.
    const relays = await pinnedRelays(this.options.lanes, this.route!, laneBound(this.options.guard));
    try {
      const connected = await connectSocketBrowser(this.socketPath, browserSwitches(relays.refuseAddress), maxFrameBytes(this.options.config.maxOutputBytes));
      const { sandbox, why } = connected.launched;
      this.noteSandbox(sandbox ? { on: true } : { on: false, why: why ?? 'the launcher gave no reason' });
      return {
        browser: connected.browser,
        relays,
        memoryBytes: connected.memoryBytes,
        // Chromium's pid means something here only when the launcher shares this PID namespace.
        ...(this.local !== undefined ? { pid: connected.launched.pid } : {}),
      };
    } catch (err) {
      await relays.close().catch(() => undefined);
      throw err;
    }
  }

  sandboxOn(): boolean {
    return this.verdict?.on === true;
  }

  readTally(token: string): Promise<RenderTally> {
    return this.tallies!(token);
  }

  openRender(token: string, lease: string): Promise<void> {
    return this.opener!(token, lease);
  }

  async stop(): Promise<void> {
    const local = this.local;
    if (local === undefined) return;
    this.local = undefined;
    local.child.kill('SIGTERM');
    const timer = setTimeout(() => local.child.kill('SIGKILL'), LAUNCHER_STOP_TIMEOUT_MS);
    await local.exited;
    clearTimeout(timer);
    rmSync(local.dir, { recursive: true, force: true });
  }

  /**
   * Waits for the browser container's launcher to make its socket: the pod's containers start
   * together, in no order, and a renderer that gave up at once would be restarted for nothing.
   */
  private async awaitLauncher(socketPath: string): Promise<void> {
    const deadline = Date.now() + LAUNCHER_READY_TIMEOUT_MS;
    let said = false;
    while (!existsSync(socketPath)) {
      if (Date.now() > deadline) throw new Error(`the browser container's launcher made no socket at ${socketPath}`);
      if (!said) this.options.logger.info('browser.waiting_for_launcher', { socket: socketPath });
      said = true;
      await new Promise((r) => setTimeout(r, LAUNCHER_POLL_MS));
    }
  }

  /** Says once why the sandbox is off, and again only when the launcher's answer changes. */
  private noteSandbox(verdict: SandboxVerdict): void {
    const before = this.verdict;
    this.verdict = verdict;
    if (verdict.on) return;
    if (before !== undefined && !before.on && before.why === verdict.why) return;
    this.options.logger.warn('browser.sandbox_off', { detail: verdict.why });
  }

  /** Starts launcher/main.ts as a child on a socket in a private directory; resolves once it listens. */
  private async startLocalLauncher(): Promise<{ child: ChildProcess; dir: string; exited: Promise<void> }> {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'tintype-browser-'));
    const main = fileURLToPath(sourceModule('./launcher/main.ts', import.meta.url));
    const tsx = typescriptLoader();
    const argv = tsx === undefined ? [main] : ['--import', tsx, main];
    const env: Record<string, string> = {
      TINTYPE_BROWSER_SOCKET: path.join(dir, 'cdp.sock'),
      TINTYPE_BROWSER_CONNECTIONS: String(this.options.lanes + 1),
      // Its stdin is a pipe from this process: it ends when this process does, even killed.
      TINTYPE_BROWSER_STOP_WITH_STDIN: '1',
      TMPDIR: dir,
      PATH: process.env['PATH'] ?? '/usr/bin:/bin',
    };
    if (this.options.config.chromiumPath !== undefined) env['CHROMIUM_PATH'] = this.options.config.chromiumPath;
    for (const name of ['LANG', 'LANGUAGE', 'TZ']) if (process.env[name] !== undefined) env[name] = process.env[name]!;
    const child = spawn(process.execPath, argv, { env, stdio: ['pipe', 'pipe', 'pipe'] });
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    let said = '';
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('the browser launcher did not start listening')), LAUNCHER_READY_TIMEOUT_MS);
        child.stdout!.on('data', (c: Buffer) => {
          said = (said + c.toString('utf8')).slice(-4096);
          if (said.includes('"launcher.listening"')) {
            clearTimeout(timer);
            resolve();
          }
        });
        child.stderr!.on('data', (c: Buffer) => (said = (said + c.toString('utf8')).slice(-4096)));
        void exited.then(() => {
          clearTimeout(timer);
          reject(new Error(`the browser launcher exited: ${said.trim().split('\n').at(-1) ?? ''}`));
        });
      });
    } catch (err) {
      child.kill('SIGKILL');
      await exited;
      rmSync(dir, { recursive: true, force: true });
      throw err;
    }
    // Its lines say what the renderer's own log says already (browsers started and lost).
    child.stdout!.removeAllListeners('data').resume();
    child.stderr!.removeAllListeners('data').resume();
    return { child, dir, exited };
  }
}

/**
 * Relays whose every connection goes to the guard of the render it is for (guard-pins.ts), so the
 * render's tally is all in the guard its read reaches. A render's choice is kept after its lane is
 * cut (its tally is read then) and dropped once the lane names its next render, or the relays close.
 */
export async function pinnedRelays(lanes: number, route: GuardRoute, maxOpenPerLane: number): Promise<RelaySet> {
  const relays = await startRelays({
    lanes,
    maxOpenPerLane,
    dial: async (render) => {
      const token = renderTokenFrom(render);
      if (token === undefined) throw new Error('a relay connection that names no render');
      return dialGuard(await route.of(token));
    },
  });
  const named: Array<string | undefined> = [];
  return {
    refuseAddress: relays.refuseAddress,
    laneAddresses: relays.laneAddresses,
    lost: relays.lost,
    async setToken(lane, token) {
      const before = named[lane];
      if (token !== undefined) {
        if (before !== undefined && before !== token) route.forget(before);
        named[lane] = token;
      }
      await relays.setToken(lane, token);
    },
    async close() {
      for (const token of named) if (token !== undefined) route.forget(token);
      await relays.close();
    },
  };
}
