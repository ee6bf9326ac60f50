/**
 * The browser container's Localhost seccomp profile (charts/tintype/files/seccomp/tintype-chromium.json;
 * docs/security.md "The browser container"), loaded as a container runtime loads it (the profile's
 * rules through libseccomp, seccomp-run.c) on real processes: an allow-list that refuses what it does
 * not name, and under which the launcher, run as a user that is not root, starts Chromium with its
 * own sandbox and renders.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { browserSwitches } from '../../../renderer/browser/pod-isolation.ts';
import { connectSocketBrowser, maxFrameBytes } from '../../../renderer/browser/socket-transport.ts';
import { LAUNCHER_MAIN, runLauncher, tempDir, type Teardowns } from './helpers.ts';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const PROFILE = JSON.parse(readFileSync(path.join(ROOT, 'charts/tintype/files/seccomp/tintype-chromium.json'), 'utf8')) as Profile;
const SOURCE = fileURLToPath(new URL('./seccomp-run.c', import.meta.url));
const LIBSECCOMP = ['/usr/lib/x86_64-linux-gnu/libseccomp.so.2', '/usr/lib/aarch64-linux-gnu/libseccomp.so.2', '/usr/lib64/libseccomp.so.2', '/usr/lib/libseccomp.so.2'].find(existsSync);
/** The user the browser container runs as is not root; here, one that exists everywhere. */
const NOBODY = 65534;

interface Rule {
  names: string[];
  action: string;
  errnoRet?: number;
  args?: Array<{ index: number; value: number; valueTwo?: number; op: string }>;
}
interface Profile {
  defaultAction: string;
  defaultErrnoRet?: number;
  syscalls: Rule[];
}

const OPS: Record<string, number> = { SCMP_CMP_NE: 1, SCMP_CMP_LT: 2, SCMP_CMP_LE: 3, SCMP_CMP_EQ: 4, SCMP_CMP_GE: 5, SCMP_CMP_GT: 6, SCMP_CMP_MASKED_EQ: 7 };

/** libseccomp's value of an action, as the OCI runtime spec names it. */
function action(name: string, errno: number | undefined): string {
  if (name === 'SCMP_ACT_ALLOW') return '7fff0000';
  if (name === 'SCMP_ACT_ERRNO') return (0x00050000 | ((errno ?? 1) & 0xffff)).toString(16);
  if (name === 'SCMP_ACT_KILL' || name === 'SCMP_ACT_KILL_THREAD') return '0';
  if (name === 'SCMP_ACT_KILL_PROCESS') return '80000000';
  throw new Error(`an action this test does not know: ${name}`);
}

/** The profile as seccomp-run's lines. */
function rules(profile: Profile): string {
  const lines = [`default ${action(profile.defaultAction, profile.defaultErrnoRet)}`];
  for (const rule of profile.syscalls) {
    const conditions = (rule.args ?? []).map((a) => `${a.index} ${OPS[a.op]!} ${a.value} ${a.valueTwo ?? 0}`);
    for (const name of rule.names) lines.push([action(rule.action, rule.errnoRet), name, conditions.length, ...conditions].join(' '));
  }
  return `${lines.join('\n')}\n`;
}

/** seccomp-run built for this test, and the profile's lines beside it. */
function build(t: Teardowns): { run: string; lines: string } {
  const dir = tempDir(t, 'tintype-seccomp-');
  chmodSync(dir, 0o755); // read by the user the launcher runs as
  const run = path.join(dir, 'seccomp-run');
  execFileSync('gcc', ['-O1', '-o', run, SOURCE, LIBSECCOMP!]);
  const lines = path.join(dir, 'profile.rules');
  writeFileSync(lines, rules(PROFILE));
  return { run, lines };
}

const unavailable = LIBSECCOMP === undefined ? 'no libseccomp.so.2 here' : spawnSync('gcc', ['--version']).status !== 0 ? 'no gcc here' : false;

t.test('an allow-list: what the profile does not name is refused', async (t) => {
  t.equal(PROFILE.defaultAction, 'SCMP_ACT_ERRNO', 'the default refuses');
  t.equal(PROFILE.defaultErrnoRet ?? 1, 1, 'with EPERM');
  const allowed = new Set(PROFILE.syscalls.filter((r) => r.action === 'SCMP_ACT_ALLOW').flatMap((r) => r.names));
  for (const call of ['unshare', 'clone', 'chroot', 'seccomp', 'socket', 'execve', 'prctl']) t.ok(allowed.has(call), `allows ${call} (Chromium and its sandbox)`);
  for (const call of ['ptrace', 'process_vm_readv', 'process_vm_writev', 'setns', 'mount', 'pivot_root', 'bpf', 'perf_event_open', 'keyctl', 'add_key', 'init_module', 'kexec_load', 'io_uring_setup', 'userfaultfd', 'sethostname', 'clock_settime', 'open_by_handle_at', 'name_to_handle_at', 'kcmp', 'pidfd_getfd']) {
    t.notOk(allowed.has(call), `does not name ${call}`);
  }
});

t.test('loaded on a real process: a call it does not name is refused', { skip: unavailable }, async (t) => {
  const { run, lines } = build(t);
  // A UTS namespace of its own may be made (Chromium's sandbox makes namespaces), but its host name
  // not set: sethostname is outside the list. Without the filter the same command succeeds.
  const argv = ['unshare', '--user', '--map-root-user', '--uts', 'hostname', 'tintype-probe'];
  t.equal(spawnSync(argv[0]!, argv.slice(1)).status, 0, 'without the filter: allowed');
  const filtered = spawnSync(run, [lines, ...argv], { encoding: 'utf8' });
  t.not(filtered.status, 0, `under the profile: refused (${filtered.stderr.trim()})`);
  t.equal(spawnSync(run, [lines, '/bin/true']).status, 0, 'an ordinary program runs under it');
});

t.test('under the profile, as a user that is not root, the launcher starts Chromium with its own sandbox and it renders', { skip: unavailable }, async (t) => {
  const { run, lines } = build(t);
  const dir = tempDir(t, 'tintype-seccomp-launcher-');
  const root = process.getuid?.() === 0;
  if (root) chownSync(dir, NOBODY, NOBODY);
  const socketPath = path.join(dir, 'cdp.sock');
  let argv = [run, lines, process.execPath, '--import', 'tsx', LAUNCHER_MAIN];
  if (root) {
    // The checkout may sit below a directory only root may enter (a clone in `mktemp -d`, 0700):
    // in a mount namespace of its own it is bound inside this test's directory, which nobody
    // reaches, and the launcher runs from there.
    const checkout = path.resolve(ROOT);
    const reach = path.join(dir, 'checkout');
    mkdirSync(reach);
    const at = (p: string): string => (p.startsWith(`${checkout}${path.sep}`) ? path.join(reach, path.relative(checkout, p)) : p);
    argv = ['unshare', '--mount', '--propagation', 'private', 'sh', '-c', 'mount --bind "$1" "$2" && cd "$2" && shift 2 && exec "$@"', 'sh', checkout, reach,
      // tap's loader, which it puts in a child's NODE_OPTIONS, is under the checkout's own path.
      'env', '-u', 'NODE_OPTIONS', 'setpriv', `--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', ...argv.map(at)];
  }
  const { child: launcher, out } = await runLauncher(t, { TMPDIR: dir, HOME: dir, TINTYPE_BROWSER_SOCKET: socketPath }, { argv, cwd: ROOT });
  t.equal(launcher.exitCode, null, `the launcher runs under it (${out().trim().split('\n').at(-1)})`);
  const connected = await connectSocketBrowser(socketPath, browserSwitches('127.0.0.1:9'), maxFrameBytes(26_214_400));
  const { browser, launched } = connected;
  try {
    t.equal(launched.sandbox, true, `Chromium has its own sandbox (${launched.why ?? ''})`);
    const status = readFileSync(`/proc/${launched.pid}/status`, 'utf8');
    t.match(status, /^Seccomp:\s+2$/m, 'Chromium runs under a seccomp filter');
    const context = await browser.createBrowserContext();
    const page = await context.newPage();
    await page.setContent('<p id="t" style="font: 32px sans-serif">rendered under the profile</p>');
    const width = (await page.$eval('#t', (e) => e.getBoundingClientRect().width)) as number;
    t.ok(width > 100, `text laid out (${width} px)`);
    const png = Buffer.from(await page.screenshot({ type: 'png' }));
    t.ok(png.length > 1000 && png.subarray(1, 4).toString('latin1') === 'PNG', 'a screenshot taken');
    await context.close();
  } finally {
    await browser.close().catch(() => {});
  }
});
