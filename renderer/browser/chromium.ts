/**
 * Which Chromium, with which switches (launcher/switches.ts) and launch options, whichever
 * isolation launches it (docs/architecture.md §3).
 */
import type { BrowserContextOptions, LaunchOptions } from 'puppeteer-core';
import type { Config } from '../../lib/config.ts';
import { chromiumEnvironment } from './launcher/environment.ts';
import { findChromium, isHeadlessShell } from './launcher/executable.ts';
import { chromiumArgs } from './launcher/switches.ts';

// The binary and the switches are the launcher's too (it starts Chromium in `pod` isolation).
export { isHeadlessShell } from './launcher/executable.ts';
export { chromiumArgs, RELAY_HOST } from './launcher/switches.ts';

/** The Chromium binary: `CHROMIUM_PATH` when set, else the first installed candidate. */
export function chromiumExecutable(config: Pick<Config, 'chromiumPath'>, exists?: (p: string) => boolean): string {
  return findChromium(config.chromiumPath, exists);
}

const LAUNCH_TIMEOUT_MS = 30_000;

/** Puppeteer's options for one browser, whatever its isolation: CDP over a pipe, the switches above. */
export function launchOptions(options: {
  /** The Chromium binary. */
  executable: string;
  /** What puppeteer runs in its place (netns: the generated launcher); the binary itself when absent. */
  launcher?: string;
  refuseProxy: string;
  noSandbox: boolean;
  /** HOME and TMPDIR, as Chromium sees them. */
  home: string;
  /** The profile directory; puppeteer's own temporary one when absent. */
  userDataDir?: string;
}): LaunchOptions {
  return {
    executablePath: options.launcher ?? options.executable,
    pipe: true,
    headless: isHeadlessShell(options.executable) ? 'shell' : true,
    args: chromiumArgs({ refuseProxy: options.refuseProxy, noSandbox: options.noSandbox }),
    // Nothing of the renderer's environment: its variables name its databases and secrets.
    env: chromiumEnvironment(process.env, { home: options.home }),
    ...(options.userDataDir !== undefined ? { userDataDir: options.userDataDir } : {}),
    defaultViewport: null,
    handleSIGINT: false,
    handleSIGTERM: false,
    handleSIGHUP: false,
    timeout: LAUNCH_TIMEOUT_MS,
  };
}

/**
 * The options of every render's browser context: its lane relay as proxy, nothing bypassed,
 * and no download written to this machine's disk.
 */
export function contextOptions(laneAddress: string): BrowserContextOptions {
  return { proxyServer: `http://${laneAddress}`, proxyBypassList: ['<-loopback>'], downloadBehavior: { policy: 'deny' } };
}
