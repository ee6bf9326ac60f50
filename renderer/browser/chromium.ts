/**
 * Which Chromium, with which switches and launch options (docs/architecture.md §6: every context
 * through the guard, `<-loopback>` bypassed nothing, no QUIC, no non-proxied UDP for WebRTC, no
 * name resolved by Chromium itself), whichever isolation launches it.
 */
import { existsSync, realpathSync } from 'node:fs';
import type { BrowserContextOptions, LaunchOptions } from 'puppeteer-core';
import type { Config } from '../../lib/config.ts';
import { chromiumEnvironment } from './chromium-env.ts';

/** Candidates in order of preference; the headless shell is much faster for this work. */
const CANDIDATES = [
  // The Debian wrapper in /usr/bin is a shell script that forks instead of exec'ing; the binary
  // behind it keeps the process tree flat (one process group, one pid to supervise).
  '/usr/lib/chromium/chromium-headless-shell',
  '/usr/bin/chromium-headless-shell',
  '/usr/lib/chromium/chromium',
  '/usr/bin/chromium',
];

/** The Chromium binary: `CHROMIUM_PATH` when set, else the first installed candidate. */
export function chromiumExecutable(config: Pick<Config, 'chromiumPath'>, exists: (p: string) => boolean = existsSync): string {
  if (config.chromiumPath !== undefined) return config.chromiumPath;
  const found = CANDIDATES.find((p) => exists(p));
  if (found === undefined) throw new Error(`no Chromium found (${CANDIDATES.join(', ')}); set CHROMIUM_PATH`);
  return found;
}

/** True for the headless shell, which takes the old `--headless` switch rather than `--headless=new`. */
export function isHeadlessShell(executable: string): boolean {
  let real = executable;
  try {
    real = realpathSync(executable);
  } catch {
    // a path that does not resolve is judged by its name
  }
  return /headless[-_]shell/.test(real);
}

/** The loopback address relays listen on; the one name Chromium may still resolve (an address). */
export const RELAY_HOST = '127.0.0.1';

/** Chromium's switches besides puppeteer's defaults. */
export function chromiumArgs(options: { refuseProxy: string; noSandbox: boolean }): string[] {
  const args = [
    // The default context (Chromium's own traffic) goes to the refusing proxy, loopback included.
    `--proxy-server=http://${options.refuseProxy}`,
    '--proxy-bypass-list=<-loopback>',
    '--disable-quic',
    '--force-webrtc-ip-handling-policy=disable_non_proxied_udp',
    '--webrtc-ip-handling-policy=disable_non_proxied_udp',
    // Every name is resolved by the guard through the proxy; Chromium resolves none itself.
    // The relays are reached by address, which the exclusion keeps usable.
    `--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE ${RELAY_HOST}`,
    '--dns-prefetch-disable',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-domain-reliability',
    '--disable-sync',
    '--no-first-run',
    '--no-default-browser-check',
    '--no-pings',
    '--disable-gpu',
    '--disable-extensions',
    '--mute-audio',
  ];
  // Only where its sandbox cannot be had (sandbox-support.ts says why, once, at start).
  if (options.noSandbox) args.push('--no-sandbox');
  return args;
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
    env: chromiumEnvironment(process.env, options.home),
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
