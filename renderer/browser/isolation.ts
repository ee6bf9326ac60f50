/**
 * What walls Chromium in, behind one interface (docs/security.md "Chromium isolation"; docs/architecture.md
 * §3): `netns` (netns-isolation.ts) or `pod` (pod-isolation.ts), as `TINTYPE_ISOLATION` says
 * (pool.ts chooses). An isolation decides who Chromium runs as and whether its own sandbox can
 * run, how its relays reach the guard, and how one browser is launched behind it; the supervisor
 * launches, watches and replaces browsers without knowing which walls they stand in.
 */
import type { Browser } from 'puppeteer-core';
import type { Config, Isolation } from '../../lib/config.ts';
import type { RenderTally } from '../../lib/guard-contract.ts';
import type { Logger } from '../../lib/log.ts';
import type { GuardEndpoint } from './guard-endpoint.ts';
import type { LookupAll } from './guard-pins.ts';
import type { RelaySet } from './relay-set.ts';
import { chromiumSandbox, type SandboxVerdict } from './sandbox-support.ts';
import type { LaunchBrowser } from './types.ts';

/** One browser launched behind an isolation's walls, with the relays its lanes use. */
export interface IsolatedBrowser {
  readonly browser: Browser;
  /** Relays of this browser alone: a lane's token names a render of this browser only. */
  readonly relays: RelaySet;
  /**
   * The root of Chromium's process tree in this PID namespace, when it differs from the launched
   * process's (or there is none: a browser reached over a socket); absent when not in this namespace.
   */
  readonly pid?: number;
  /** Chromium's memory as reported from where it runs (another container); absent: read from /proc here. */
  readonly memoryBytes?: () => number;
}

/** One isolation mode: everything about a browser's launch that differs between `netns` and `pod`. */
export interface BrowserIsolation {
  readonly mode: Isolation;
  /**
   * Decides, once, what this machine allows (the Chromium binary, its sandbox) and says in the log
   * which wall it cannot have; opens what every launch needs to reach the guard.
   */
  start(): Promise<void>;
  /** Launches one browser behind the walls; on failure leaves nothing of it behind. */
  launch(): Promise<IsolatedBrowser>;
  /** Whether the browsers run with Chromium's own sandbox (false until known). */
  sandboxOn(): boolean;
  /** Reads (and clears) a render's refusal tally at the guard; rejects when the guard cannot answer. */
  readTally(token: string): Promise<RenderTally>;
  /** Opens a render's token with its lease at the guard (guard-endpoint.ts renderOpener); rejects when it did not. */
  openRender(token: string, lease: string): Promise<void>;
  /** Closes what start() opened. */
  stop(): Promise<void>;
}

/** What an isolation is made from. */
export interface IsolationOptions {
  config: Pick<Config, 'chromiumPath' | 'maxOutputBytes'> & Partial<Pick<Config, 'chromiumUid' | 'browserSocket'>>;
  guard: GuardEndpoint;
  /** How pod isolation resolves the guard's name (guard-pins.ts); the system resolver by default. */
  guardLookup?: LookupAll;
  logger: Logger;
  launchBrowser: LaunchBrowser;
  /** Lane relays per browser. */
  lanes: number;
}

export function runningAsRoot(): boolean {
  return process.getuid?.() === 0;
}

/** Whether Chromium's own sandbox can run as the user it will be; said once, at start, when it cannot. */
export function decideSandbox(
  logger: Logger,
  options: { isolation: Isolation; asRoot: boolean; chromiumUid: number },
): SandboxVerdict {
  const verdict = chromiumSandbox(options);
  if (!verdict.on) logger.warn('browser.sandbox_off', { detail: verdict.why });
  return verdict;
}
