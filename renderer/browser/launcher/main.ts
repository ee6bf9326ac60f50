/**
 * The browser container's one program (docs/architecture.md §3): holds no secret, starts Chromium
 * for each connection on its unix socket and bridges Chromium's CDP pipe to it. It imports only
 * `node:` modules and its siblings, so the browser image carries it compiled beside Node, Chromium
 * and fonts, and nothing of the renderer (docs/architecture.md §3). Settings: TINTYPE_BROWSER_SOCKET
 * (the socket to make, required), CHROMIUM_PATH, TINTYPE_BROWSER_CONNECTIONS (browsers at once,
 * default 4), TINTYPE_BROWSER_MEMORY_REPORT_MS (default 2000), TMPDIR (profiles),
 * TINTYPE_BROWSER_FONTCONFIG (the fontconfig file Chromium reads: the image's, read-only; unset,
 * one is written at start from the system's, fontconfig.ts), TINTYPE_BROWSER_STOP_WITH_STDIN=1 (a
 * renderer's own child: stop when its stdin ends); no arguments.
 */
import { accessSync, chmodSync, constants, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { findChromium } from './executable.ts';
import { systemOnlyFontsConfig } from './fontconfig.ts';
import { ownSandbox } from './sandbox.ts';
import { createLauncher, type LauncherLog } from './server.ts';

/** After SIGTERM, how long with no connection means the renderer has gone (a replacement dials in within milliseconds). */
const GONE_AFTER_QUIET_MS = 2_000;

const log: LauncherLog = (event, fields = {}) => {
  process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), role: 'browser', event, ...fields })}\n`);
};

function positive(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 1) {
    log('launcher.bad_setting', { detail: `${name} must be a whole number of at least 1` });
    process.exit(2);
  }
  return n;
}

/**
 * The fontconfig file Chromium reads: TINTYPE_BROWSER_FONTCONFIG (the browser image writes it at
 * build, owned by root: read-only to Chromium's uid), else one written now into a directory of
 * this launcher's (writable by Chromium's uid where it runs as this one: docs/security.md).
 */
function fontconfigFile(tmpDir: string): string {
  const configured = process.env['TINTYPE_BROWSER_FONTCONFIG'];
  if (configured !== undefined && configured !== '') return configured;
  const file = path.join(mkdtempSync(path.join(tmpDir, 'tintype-fonts-')), 'fonts.conf');
  writeFileSync(file, systemOnlyFontsConfig());
  chmodSync(file, 0o444);
  return file;
}

async function main(): Promise<void> {
  const socketPath = process.env['TINTYPE_BROWSER_SOCKET'];
  if (socketPath === undefined || socketPath === '') {
    log('launcher.bad_setting', { detail: 'TINTYPE_BROWSER_SOCKET must name the socket to create' });
    process.exit(2);
  }
  const configured = process.env['CHROMIUM_PATH'];
  let chromium: string;
  try {
    chromium = findChromium(configured === '' ? undefined : configured);
    accessSync(chromium, constants.X_OK);
  } catch (err) {
    log('launcher.no_chromium', { detail: (err as Error).message });
    process.exit(1);
  }
  const sandbox = ownSandbox();
  if (!sandbox.on) log('launcher.sandbox_off', { detail: sandbox.why });
  const launcher = createLauncher({
    socketPath,
    chromium,
    sandbox,
    maxBrowsers: positive('TINTYPE_BROWSER_CONNECTIONS', 4),
    memoryReportMs: positive('TINTYPE_BROWSER_MEMORY_REPORT_MS', 2_000),
    tmpDir: os.tmpdir(),
    fontconfig: fontconfigFile(os.tmpdir()),
    env: process.env,
    log,
  });
  await launcher.start();
  log('launcher.listening', { socket: socketPath, chromium, sandbox: sandbox.on });
  let stopping = false;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    void launcher.stop().finally(() => process.exit(0));
  };
  process.on('SIGINT', stop);
  // Started by a renderer as its own child (no container): its stdin is a pipe from that renderer,
  // which ends when the renderer does, however it ended. Then nobody is left to serve, and the
  // renderer's SIGTERM comes once it needs no browser.
  if (process.env['TINTYPE_BROWSER_STOP_WITH_STDIN'] === '1') {
    process.stdin.on('end', stop).on('error', stop).resume();
    process.on('SIGTERM', stop);
  } else {
    // The browser container: SIGTERM is the pod's deletion, which reaches both containers at once,
    // while the renderer's still serves through its preStop wait and then finishes its renders
    // (docs/helm.md "Rolling restarts"). The launcher serves on until the renderer has let go of
    // every browser (its connections end when it exits), then stops; the grace period bounds it.
    // A browser lost while the renderer drains leaves no connection until its replacement dials
    // in, a moment later: only a quiet spell with none means the renderer has gone.
    process.on('SIGTERM', () => {
      log('launcher.stopping', { browsers: launcher.browsers() });
      void launcher.idle(GONE_AFTER_QUIET_MS).then(stop);
    });
  }
}

main().catch((err: unknown) => {
  log('launcher.failed', { detail: (err as Error).message });
  process.exit(1);
});
