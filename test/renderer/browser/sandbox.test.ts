/**
 * Chromium's jail, seen from outside the running service (docs/security.md "Chromium isolation"): a real
 * `tintype start` in netns isolation, and every Chromium process it runs read from /proc. Each
 * runs as a uid that is neither 0 nor the service's, with its own sandbox on where this machine
 * can make user namespaces, in a mount namespace of its own where the data directory, the
 * checkout and the service's sockets do not exist, in a PID namespace of its own with a /proc of
 * that namespace, and with none of the service's variables in its environment. Nothing of it is
 * left in the service's TMPDIR once the service stopped.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateKeyPairSync } from 'node:crypto';
import t from 'tap';
import { leaseKeyText } from '../../../lib/lease.ts';
import { processTree } from '../../../renderer/browser/process-tree.ts';
import { cleanup, startService } from '../../e2e/service.ts';
import { cmdline, until } from './helpers.ts';

const CHECKOUT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
/** Variables Chromium may carry with its own values: locale, time zone, where programs, its home and its working directory (the jail's shell sets PWD) are. */
const NEUTRAL = /^(PATH|HOME|TMPDIR|PWD|LANG|LANGUAGE|TZ|LC_.*)$/;
/** Files of the host's /etc that Chromium never reads (its name, its hosts, its TLS keys), where this machine has them. */
const HOST_ETC = ['/etc/hostname', '/etc/hosts', '/etc/machine-id', '/etc/ssl/private', '/etc/shadow', '/etc/environment'].filter((p) => existsSync(p));
/** Policy's lease signing key, the secret that mints leases. */
const LEASE_SECRET = leaseKeyText(generateKeyPairSync('ed25519').privateKey);

/** Whether a process has ended: reaped, or exiting (a zombie, or dead and not yet reaped). */
function ended(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return /^[ZX]/.test(stat.slice(stat.lastIndexOf(')') + 2));
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    if (code === 'ENOENT' || code === 'ESRCH') return true;
    throw err;
  }
}

/**
 * A process whose /proc entry stopped answering is ending; the exit may not have reached its
 * state yet (still running its exit, not yet a zombie). Whether it ends within `ms`.
 */
const ENDING_MS = 2_000;
async function endsWithin(pid: number, ms: number): Promise<boolean> {
  for (const until = Date.now() + ms; !ended(pid); await new Promise((r) => setTimeout(r, 20))) {
    if (Date.now() > until) return false;
  }
  return true;
}

function environ(pid: number | 'self'): Map<string, string> {
  const out = new Map<string, string>();
  for (const entry of readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0')) {
    const at = entry.indexOf('=');
    if (at > 0) out.set(entry.slice(0, at), entry.slice(at + 1));
  }
  return out;
}

/** The line `name:` of /proc/<pid>/status, split into its fields. */
function status(pid: number, name: string): string[] {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${name}:`));
  return (line ?? '').slice(name.length + 1).trim().split(/\s+/);
}

/** The paths of the unix sockets `pid` holds open (from its fds and its network namespace's table). */
function unixSocketPaths(pid: number): string[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m !== null) inodes.add(m[1]!);
    } catch {
      // closed while we looked
    }
  }
  const paths: string[] = [];
  for (const line of readFileSync(`/proc/${pid}/net/unix`, 'utf8').split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f.length >= 8 && inodes.has(f[6]!) && f[7]!.startsWith('/')) paths.push(f[7]!);
  }
  return paths;
}

/**
 * True when `p` does not exist in the filesystem `pid` sees. A process in Chromium's own sandbox
 * has its root in a directory of /proc that is gone (ESRCH): nothing at all is reachable from it.
 */
function absentFor(pid: number, p: string): boolean {
  try {
    statSync(`/proc/${pid}/root${p}`);
    return false;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code === 'ENOENT' || code === 'ESRCH';
  }
}

/** A process's arguments; Chromium's child processes rewrite theirs into one space-separated string. */
function args(pid: number): string[] {
  return cmdline(pid).flatMap((a) => a.split(' '));
}

/** The service's Chromium processes: every process below it whose program is Chromium's. */
function chromiumProcesses(service: number): number[] {
  return processTree(service)
    .map((s) => s.pid)
    .filter((pid) => /chromium/.test(args(pid)[0] ?? ''));
}

t.test('netns: every Chromium process of a running service, read from /proc', async (t) => {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'tintype-sandbox-tmp-'));
  t.teardown(() => rmSync(tmp, { recursive: true, force: true }));
  const svc = await startService({
    env: {
      TINTYPE_SLOTS: '1',
      TINTYPE_ISOLATION: 'netns',
      TMPDIR: tmp,
      OTEL_SERVICE_NAME: 'tintype-sandbox-test',
      TINTYPE_LEASE_SIGNING_KEY: LEASE_SECRET,
    },
  });
  t.teardown(cleanup);
  let stopped = false;
  t.teardown(async () => {
    if (!stopped) await svc.signal('SIGKILL');
  });

  // Prepared contexts have page processes; wait until one is there.
  await until(() => chromiumProcesses(svc.pid).some((pid) => args(pid).includes('--type=renderer')));
  const pids = chromiumProcesses(svc.pid);
  const serviceUid = status(svc.pid, 'Uid')[0];
  const serviceEnv = environ(svc.pid);
  t.ok(serviceEnv.has('TINTYPE_LEASE_SIGNING_KEY') && serviceEnv.has('TINTYPE_DATA_DIR'), 'the service carries its variables');
  const sockets = unixSocketPaths(svc.pid);
  t.ok(sockets.length > 0, 'the service holds unix sockets of its own');
  const userNamespaces = spawnSync('unshare', ['--user', 'true']).status === 0;
  const hostInit = readFileSync('/proc/1/cmdline');

  // A helper process may end while it is read (Chromium starts and retires some on its own);
  // every process that stays is checked whole, and the browser and a page process must be among them.
  const checked = new Map<number, string[]>();
  for (const pid of pids) {
    const argv = args(pid);
    const name = `pid ${pid} (${argv.find((a) => a.startsWith('--type=')) ?? 'browser'})`;
    try {
      const ids = status(pid, 'Uid').concat(status(pid, 'Gid'));
      t.notOk(ids.includes('0'), `${name}: no uid or gid is 0 (${ids.join(' ')})`);
      t.notOk(ids.includes(serviceUid!), `${name}: none is the service's`);
      if (userNamespaces) t.notOk(argv.includes('--no-sandbox'), `${name}: user namespaces work here, so its sandbox is on`);
      t.not(readlinkSync(`/proc/${pid}/ns/mnt`), readlinkSync(`/proc/${svc.pid}/ns/mnt`), `${name}: its mount namespace is not the service's`);
      t.ok(absentFor(pid, svc.dataDir), `${name}: the data directory does not exist for it`);
      t.ok(absentFor(pid, CHECKOUT), `${name}: nor the checkout`);
      for (const socket of sockets) t.ok(absentFor(pid, socket), `${name}: nor the service's socket ${socket}`);
      for (const p of HOST_ETC) t.ok(absentFor(pid, p), `${name}: nor the host's ${p}`);
      t.ok(status(pid, 'NSpid').length > 1, `${name}: it is in a PID namespace below the host's`);
      const env = environ(pid);
      const leaked = [...serviceEnv.keys()].filter((v) => !NEUTRAL.test(v) && env.has(v));
      t.same(leaked, [], `${name}: none of the service's variables is in its environment`);
      t.notOk([...env.values()].some((v) => v.includes(LEASE_SECRET)), `${name}: nor the secret under another name`);
      checked.set(pid, argv);
    } catch (err) {
      // ENOENT once it is reaped; ESRCH while it is exiting (its /proc entry stays, unreadable).
      const code = (err as { code?: unknown }).code;
      if ((code !== 'ENOENT' && code !== 'ESRCH') || !(await endsWithin(pid, ENDING_MS))) throw err;
      t.comment(`${name} ended while it was read`);
    }
  }

  const browser = [...checked].find(([, argv]) => !argv.some((a) => a.startsWith('--type=')))?.[0];
  t.ok(browser !== undefined, 'the browser process is among them');
  t.ok([...checked.values()].some((argv) => argv.includes('--type=renderer')), 'and page processes');
  t.not(readFileSync(`/proc/${browser}/root/proc/1/cmdline`).toString(), hostInit.toString(), "PID 1 of its /proc is not the host's");
  t.ok(args(browser!).includes('--remote-debugging-pipe'), 'CDP over a pipe');
  for (const p of ['/etc/fonts/fonts.conf', '/etc/passwd', '/etc/ld.so.cache']) {
    if (existsSync(p)) t.notOk(absentFor(browser!, p), `what Chromium reads of /etc is there: ${p}`);
  }
  const profile = args(browser!).find((a) => a.startsWith('--user-data-dir='))!.slice('--user-data-dir='.length);
  t.equal(String(statSync(`/proc/${browser}/root${profile}`).uid), status(browser!, 'Uid')[0], "its profile is its own user's");

  t.equal(await svc.signal('SIGTERM'), 0, 'the service stops cleanly');
  stopped = true;
  t.same(
    readdirSync(tmp).filter((name) => !name.startsWith('tsx-')),
    [],
    "nothing of Chromium's is left in the service's TMPDIR",
  );
});
