/**
 * Whether Chromium's own sandbox can run here, decided once when the pool starts (in `pod`
 * isolation the launcher decides it in the browser's own container: launcher/sandbox.ts). Where
 * it cannot be had, Chromium is started with --no-sandbox and the pool says why once, at start
 * (README "Chromium isolation").
 */
import type { Isolation } from '../../lib/config.ts';
import { findTool } from './launch-script.ts';
import { probeFailure, ROOT_SANDBOX_REFUSED, UNSHARE_CANDIDATES, userNamespaces, type SandboxVerdict } from './launcher/sandbox.ts';

export type { SandboxVerdict } from './launcher/sandbox.ts';

/**
 * Can Chromium, as the user it will run as, create the user namespaces its sandbox is made of?
 * `chromiumUid` is the uid it switches to when the renderer is root (netns isolation).
 */
export function chromiumSandbox(options: { isolation: Isolation; asRoot: boolean; chromiumUid: number }): SandboxVerdict {
  if (options.isolation === 'pod' && options.asRoot) return { on: false, why: ROOT_SANDBOX_REFUSED };
  if (!(options.isolation === 'netns' && options.asRoot)) return userNamespaces();
  let probe: string[];
  try {
    const unshare = findTool(UNSHARE_CANDIDATES);
    probe = [findTool(['/usr/bin/setpriv', '/bin/setpriv']), `--reuid=${options.chromiumUid}`, `--regid=${options.chromiumUid}`, '--clear-groups', unshare, '--user', 'true'];
  } catch {
    return { on: false, why: 'unshare(1) is not installed, so whether user namespaces can be made is unknown' };
  }
  const why = probeFailure(probe);
  if (why === undefined) return { on: true };
  return { on: false, why: `user namespaces cannot be made here (unshare --user: ${why})` };
}
