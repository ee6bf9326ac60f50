/**
 * Whether Chromium's own sandbox can run here, decided once when the pool starts. On Linux
 * without a setuid helper (Debian ships none) the sandbox is made of user namespaces, and
 * Chromium refuses it outright when its uid is 0. Where it cannot be had, Chromium is started
 * with --no-sandbox and the pool says why once, at start (docs/security.md "Chromium isolation").
 */
import { spawnSync } from 'node:child_process';
import type { Isolation } from '../../lib/config.ts';
import { findTool } from './launch-script.ts';

const PROBE_TIMEOUT_MS = 5_000;

export type SandboxVerdict = { on: true } | { on: false; why: string };

/** Runs `argv` and says why it failed, or undefined when it exited 0. */
function failure(argv: readonly string[]): string | undefined {
  const r = spawnSync(argv[0]!, argv.slice(1), { env: {}, timeout: PROBE_TIMEOUT_MS, encoding: 'utf8', stdio: ['ignore', 'ignore', 'pipe'] });
  if (r.status === 0) return undefined;
  const said = (r.stderr ?? '').trim().split('\n').at(-1) ?? '';
  return said !== '' ? said : (r.error?.message ?? `exit ${r.status ?? r.signal}`);
}

/**
 * Can Chromium, as the user it will run as, create the user namespaces its sandbox is made of?
 * `chromiumUid` is the uid it switches to when the renderer is root (netns isolation).
 */
export function chromiumSandbox(options: { isolation: Isolation; asRoot: boolean; chromiumUid: number }): SandboxVerdict {
  if (options.isolation === 'pod' && options.asRoot) {
    return { on: false, why: 'the renderer runs as root and Chromium refuses its sandbox as root: run the container as a user that is not root' };
  }
  let unshare: string;
  try {
    unshare = findTool(['/usr/bin/unshare', '/bin/unshare']);
  } catch {
    return { on: false, why: 'unshare(1) is not installed, so whether user namespaces can be made is unknown' };
  }
  const probe =
    options.isolation === 'netns' && options.asRoot
      ? [
          findTool(['/usr/bin/setpriv', '/bin/setpriv']),
          `--reuid=${options.chromiumUid}`,
          `--regid=${options.chromiumUid}`,
          '--clear-groups',
          unshare,
          '--user',
          'true',
        ]
      : [unshare, '--user', 'true'];
  const why = failure(probe);
  if (why === undefined) return { on: true };
  return { on: false, why: `user namespaces cannot be made here (unshare --user: ${why})` };
}
