/**
 * netns isolation: the filesystem Chromium sees (README "Chromium isolation"). The launcher
 * gives Chromium a mount namespace of its own whose root is a fresh tmpfs holding only what a
 * browser needs, read-only from the host: /usr, the /bin, /sbin and /lib links (or directories),
 * the fontconfig cache, Chromium's own directory, and of /etc only what Chromium reads (fonts,
 * CA certificates, the dynamic linker's cache, users and groups, the time zone, its policies):
 * not the host's name, its hosts file, its TLS keys or anything else an operator keeps there. /dev holds the five harmless
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

/** Host paths shared read-only: programs, libraries and the font cache. */
const SHARED = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/var/cache/fontconfig'];
/**
 * What Chromium reads of /etc, shared read-only where the host has it: fontconfig, the CA store,
 * the dynamic linker's cache and configuration, users and groups (and how they are looked up),
 * the time zone, MIME types, and Chromium's own policies and preferences.
 */
export const SHARED_ETC = [
  '/etc/fonts',
  '/etc/ssl/certs',
  '/etc/ld.so.cache',
  '/etc/ld.so.conf',
  '/etc/ld.so.conf.d',
  '/etc/passwd',
  '/etc/group',
  '/etc/nsswitch.conf',
  '/etc/localtime',
  '/etc/mime.types',
  '/etc/chromium',
];
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
  for (const p of [...SHARED, ...SHARED_ETC]) {
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
    } else if (stat.isFile()) {
      lines.push(`mkdir -p "$R"${sh(path.dirname(p))}`, `touch "$R"${sh(p)}`, `${sh(mount)} --bind -o ro,nosuid,nodev ${sh(p)} "$R"${sh(p)}`);
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
