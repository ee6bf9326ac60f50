/**
 * Whether Chromium's own sandbox can run as this process's user. On Linux without a setuid
 * helper (Debian ships none) the sandbox is made of user namespaces, and Chromium refuses it
 * outright as uid 0. Where it cannot be had, Chromium is started with --no-sandbox and the reason
 * is said once, at start (README, "Chromium isolation").
 */
import { existsSync } from 'node:fs';
import { spawnSync } from 'node:child_process';

const PROBE_TIMEOUT_MS = 5_000;

export type SandboxVerdict = { on: true } | { on: false; why: string };

/** Runs `argv` and says why it failed, or undefined when it exited 0. */
export function probeFailure(argv: readonly string[]): string | undefined {
  const r = spawnSync(argv[0]!, argv.slice(1), { env: {}, timeout: PROBE_TIMEOUT_MS, encoding: 'utf8', stdio: ['ignore', 'ignore', 'pipe'] });
  if (r.status === 0) return undefined;
  const said = (r.stderr ?? '').trim().split('\n').at(-1) ?? '';
  return said !== '' ? said : (r.error?.message ?? `exit ${r.status ?? r.signal}`);
}

/** The first of `candidates` that exists. */
export function firstExisting(candidates: readonly string[]): string | undefined {
  return candidates.find((p) => existsSync(p));
}

export const UNSHARE_CANDIDATES = ['/usr/bin/unshare', '/bin/unshare'];

/** As root, Chromium refuses its sandbox. */
export const ROOT_SANDBOX_REFUSED = 'Chromium runs as root and refuses its sandbox as root: run it as a user that is not root';

/** Can Chromium, started as this process's user, have its sandbox? Never as root. */
export function ownSandbox(uid: number | undefined = process.getuid?.()): SandboxVerdict {
  if (uid === 0) return { on: false, why: ROOT_SANDBOX_REFUSED };
  return userNamespaces();
}

/** Can this process, as it is, create the user namespaces Chromium's sandbox is made of? */
export function userNamespaces(): SandboxVerdict {
  const unshare = firstExisting(UNSHARE_CANDIDATES);
  if (unshare === undefined) return { on: false, why: 'unshare(1) is not installed, so whether user namespaces can be made is unknown' };
  const why = probeFailure([unshare, '--user', 'true']);
  if (why === undefined) return { on: true };
  return { on: false, why: `user namespaces cannot be made here (unshare --user: ${why})` };
}
