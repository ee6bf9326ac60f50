/**
 * netns isolation: the filesystem Chromium sees (docs/security.md "Chromium isolation"). The launcher
 * gives Chromium a mount namespace of its own whose root is a fresh tmpfs holding only what a
 * browser needs, read-only from the host: /usr, /etc, the /bin, /sbin and /lib links (or
 * directories), the fontconfig cache and Chromium's own directory. /dev holds the five harmless
 * character devices and a private /dev/shm, /proc is the browser's PID namespace's own, /tmp is
 * a private tmpfs with the profile in it. The data directory, the checkout, the service's sockets
 * and every other path of the host do not exist there. Everything written in the jail is in
 * memory and goes with the namespace when Chromium exits: nothing is left to remove.
 *
 * Chromium is then started as an unprivileged user: as a uid of its own (`TINTYPE_CHROMIUM_UID`,
 * with no capability and no way to gain one) when the renderer is root; when it is not, the
 * namespaces are made in a user namespace, and Chromium gets one more in which it is that uid
 * (from the host it is the renderer's own uid: only root can start it as another).
 */
import { existsSync, lstatSync, readlinkSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { findTool, sh } from './launch-script.ts';

/** The in-jail directory Chromium's profile lives in (`--user-data-dir`). */
export const JAIL_PROFILE_DIR = '/tmp/profile';
/** HOME and TMPDIR inside the jail. */
export const JAIL_HOME = '/tmp';

/** Host paths shared read-only: programs, libraries, /etc (fonts, CA store, passwd) and the font cache. */
const SHARED = ['/usr', '/etc', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/var/cache/fontconfig'];
/** Device nodes bound into the jail's /dev. */
const DEVICES = ['null', 'zero', 'full', 'random', 'urandom'];

/** Who Chromium runs as. */
export type JailUser =
  /** The renderer is root: switch to this uid and gid. */
  | { kind: 'uid'; uid: number; gid: number }
  /** The renderer is not root (the namespaces are in a user namespace): nest one more, mapping root to this uid. */
  | { kind: 'nested'; uid: number; gid: number };

/** True when `p` is `dir` or below it. */
function under(p: string, dir: string): boolean {
  return p === dir || p.startsWith(dir.endsWith('/') ? dir : `${dir}/`);
}

/** The host paths shared into the jail, as shell lines run with `$R` the jail's root. */
function shareLines(mount: string, chromiumPath: string): string[] {
  const lines: string[] = [];
  const bind = (p: string): void => {
    lines.push(`mkdir -p "$R"${sh(p)}`, `${sh(mount)} --rbind -o ro,nosuid,nodev ${sh(p)} "$R"${sh(p)}`);
  };
  for (const p of SHARED) {
    let stat;
    try {
      stat = lstatSync(p);
    } catch {
      continue;
    }
    if (stat.isSymbolicLink()) {
      lines.push(`mkdir -p "$R"${sh(path.dirname(p))}`, `ln -s ${sh(readlinkSync(p))} "$R"${sh(p)}`);
    } else if (stat.isDirectory()) {
      bind(p);
    }
  }
  // A Chromium installed outside the shared paths (/opt/…) brings its own directory.
  let real = chromiumPath;
  try {
    real = realpathSync(chromiumPath);
  } catch {
    // judged by the path given
  }
  for (const p of new Set([path.dirname(chromiumPath), path.dirname(real)])) {
    if (!SHARED.some((s) => under(p, s)) && existsSync(p)) bind(p);
  }
  return lines;
}

/**
 * The script that builds the jail at `root` (an empty directory) and execs Chromium in it with
 * the script's arguments. Run as root of a fresh mount namespace that is inside the browser's
 * PID namespace (the /proc it mounts is that namespace's).
 */
export function jailScript(options: { root: string; chromiumPath: string; user: JailUser }): string {
  const mount = findTool(['/usr/bin/mount', '/bin/mount']);
  const umount = findTool(['/usr/bin/umount', '/bin/umount']);
  const pivotRoot = findTool(['/usr/sbin/pivot_root', '/sbin/pivot_root', '/usr/bin/pivot_root']);
  const setpriv = findTool(['/usr/bin/setpriv', '/bin/setpriv']);
  const unshare = findTool(['/usr/bin/unshare', '/bin/unshare']);
  const { uid, gid } = options.user;
  const lines = [
    'set -e',
    `R=${sh(options.root)}`,
    `${sh(mount)} -t tmpfs -o mode=0755,nosuid,nodev tintype-jail "$R"`,
    ...shareLines(mount, options.chromiumPath),
    'mkdir "$R/dev" "$R/proc" "$R/tmp" "$R/.old"',
    `${sh(mount)} -t tmpfs -o mode=0755,nosuid,noexec tintype-dev "$R/dev"`,
    ...DEVICES.flatMap((d) => [`touch "$R/dev/${d}"`, `${sh(mount)} --bind /dev/${d} "$R/dev/${d}"`]),
    'mkdir "$R/dev/shm"',
    `${sh(mount)} -t tmpfs -o mode=1777,nosuid,nodev tintype-shm "$R/dev/shm"`,
    'ln -s /proc/self/fd "$R/dev/fd"',
    `${sh(mount)} -t proc -o nosuid,nodev,noexec proc "$R/proc"`,
    `${sh(mount)} -t tmpfs -o mode=1777,nosuid,nodev tintype-tmp "$R/tmp"`,
    `mkdir -m 0700 "$R"${sh(JAIL_PROFILE_DIR)}`,
    // Root of a nested user namespace owns what root owns here; a uid of its own needs the profile.
    ...(options.user.kind === 'uid' ? [`chown ${uid}:${gid} "$R"${sh(JAIL_PROFILE_DIR)}`] : []),
    // pivot_root, not chroot: a chrooted process may not create user namespaces, which
    // Chromium's own sandbox needs.
    'cd "$R"',
    `${sh(pivotRoot)} . .old`,
    `${sh(umount)} -l /.old`,
    'rmdir /.old',
    'cd /',
    `${sh(mount)} -o remount,bind,ro /`,
  ];
  if (options.user.kind === 'uid') {
    lines.push(
      `exec ${sh(setpriv)} --reuid=${uid} --regid=${gid} --clear-groups --no-new-privs --inh-caps=-all --bounding-set=-all -- ${sh(options.chromiumPath)} "$@"`,
    );
  } else {
    lines.push(`exec ${sh(unshare)} --user --map-user=${uid} --map-group=${gid} -- ${sh(options.chromiumPath)} "$@"`);
  }
  return lines.join('\n') + '\n';
}
