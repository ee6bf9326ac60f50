/**
 * The renderer pod's `browser` container, as a kubelet would run it beside the renderer's, for the
 * chart's wiring run: in the renderer pod's network namespace, but in a PID and mount namespace of
 * its own (`unshare --pid --fork --mount-proc`, as root), then as the container's uid with no
 * capability and no way to gain one. Its filesystem is this machine's with the container's
 * volumes on top, and with the wiring run's own files (the release's values, which hold the
 * secrets, and every other pod's /tmp) masked, since its image has none of them. The launcher
 * runs compiled into one file of plain JavaScript that imports only `node:` modules, as the
 * browser image carries it (no checkout, no packages).
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from '../../helm.ts';

/** One emptyDir of a container: the host directory that stands for it, and where it is mounted. */
export interface VolumeMount {
  dir: string;
  mountPath: string;
}

/**
 * Compiles the launcher's two entry points (renderer/browser/launcher/main.ts, and session-main.ts,
 * which it starts beside itself for each browser) into the directory `out/launcher`, as the image
 * holds them in /app/launcher; fails if either needs any package. Returns the directory.
 */
export function compileLauncher(out: string): string {
  const dir = path.join(out, 'launcher');
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'package.json'), '{"type":"module"}\n');
  const r = spawnSync(
    process.execPath,
    [
      '-e',
      "require('esbuild').buildSync({entryPoints:process.argv.slice(2),outdir:process.argv[1],bundle:true,platform:'node',format:'esm',target:'node20',external:['node:*'],logLevel:'error'})",
      dir,
      path.join(ROOT, 'renderer/browser/launcher/main.ts'),
      path.join(ROOT, 'renderer/browser/launcher/session-main.ts'),
    ],
    { cwd: ROOT, encoding: 'utf8' },
  );
  if (r.status !== 0) throw new Error(`the launcher does not compile on its own: ${r.stderr}`);
  return dir;
}

/** The host directories standing for a pod's emptyDirs, made once per pod and volume, shared by its containers. */
export function emptyDirFor(root: string, pod: string, volume: string, owner?: number): string {
  const d = path.join(root, 'volumes', pod, volume);
  mkdirSync(d, { recursive: true });
  chmodSync(d, 0o777);
  if (owner !== undefined) chownSync(d, owner, owner);
  return d;
}

/**
 * Shell lines mounting `mounts` in a fresh mount namespace; /run is the container's own (empty)
 * first, unless the caller has mounted it already (`runMounted`).
 */
export function mountLines(mounts: VolumeMount[], options: { runMounted?: boolean } = {}): string[] {
  const lines: string[] = [];
  if (options.runMounted !== true && mounts.some((m) => m.mountPath.startsWith('/run/'))) lines.push('mount -t tmpfs -o mode=0755 tintype-run /run');
  for (const m of mounts) {
    lines.push(`mkdir -p '${m.mountPath}'`, `mount --bind '${m.dir}' '${m.mountPath}'`);
  }
  return lines;
}

/**
 * The argv that runs the browser container: `ip netns exec <ns>`, then new PID and mount
 * namespaces, its volumes, the run's own files masked, then the launcher as `uid`.
 */
export function browserContainerArgv(options: {
  ns: string;
  uid: number;
  mounts: VolumeMount[];
  /** Directories of this machine the container's image does not have (the run's files). */
  masked: string[];
  /** The compiled launcher's directory (compileLauncher). */
  launcher: string;
  env: Record<string, string>;
}): string[] {
  const image = '/run/tintype-image';
  const script = [
    'set -e',
    // What the image holds of this run: the compiled launcher and Node, bound before the volumes
    // are mounted (an emptyDir at /tmp would hide a checkout, or its Node, kept under /tmp).
    'mount -t tmpfs -o mode=0755 tintype-run /run',
    `mkdir -p ${image}/launcher`,
    `touch ${image}/node`,
    `mount --bind '${options.launcher}' ${image}/launcher`,
    `mount --bind '${process.execPath}' ${image}/node`,
    ...mountLines(options.mounts, { runMounted: true }),
    'mount -t tmpfs -o mode=1777,size=256m tintype-shm /dev/shm',
    ...options.masked.map((d) => `if [ -d '${d}' ]; then mount -t tmpfs -o mode=0755,size=1m tintype-masked '${d}'; fi`),
    `exec setpriv --reuid=${options.uid} --regid=${options.uid} --clear-groups --no-new-privs --inh-caps=-all --bounding-set=-all -- env -i ${Object.entries(
      options.env,
    )
      .map(([k, v]) => `'${k}=${v}'`)
      .join(' ')} ${image}/node ${image}/launcher/main.js`,
  ].join('\n');
  return ['ip', 'netns', 'exec', options.ns, 'unshare', '--pid', '--fork', '--mount-proc', '--', 'sh', '-c', script];
}

/**
 * What a process inside the browser container finds, as JSON: its uid, the processes it sees,
 * whether any environment or file it can read holds one of `secrets`, each of `paths` (exists or
 * the error), and each of `connects` (connected or the error), and each of `requests` (the status).
 */
export const PROBE = `
const fs = require('fs'), net = require('net'), http = require('http');
const [secrets, paths, connects, requests] = JSON.parse(process.argv[1]);
const out = { uid: process.getuid(), pids: [], secretIn: [], paths: {}, connects: {}, requests: {} };
for (const name of fs.readdirSync('/proc')) {
  if (!/^\\d+$/.test(name)) continue;
  out.pids.push(Number(name));
  try { const env = fs.readFileSync('/proc/' + name + '/environ', 'utf8'); if (secrets.some((s) => env.includes(s))) out.secretIn.push('/proc/' + name + '/environ'); } catch {}
}
for (const p of paths) {
  try { const text = fs.readFileSync(p, 'utf8'); out.paths[p] = 'readable'; if (secrets.some((s) => text.includes(s))) out.secretIn.push(p); }
  catch (e) { out.paths[p] = e.code; }
}
const pending = [];
for (const [h, p] of connects) pending.push(new Promise((resolve) => {
  const s = net.connect({ host: h, port: p, timeout: 1500 });
  const done = (r) => { if (out.connects[h + ':' + p]) return; out.connects[h + ':' + p] = r; s.destroy(); resolve(); };
  s.on('connect', () => done('connected')); s.on('error', (e) => done(e.code)); s.on('timeout', () => done('timeout'));
}));
for (const r of requests) pending.push(new Promise((resolve) => {
  const req = http.request({ host: r.host, port: r.port, path: r.path, method: r.method, headers: r.headers, timeout: 5000 }, (res) => {
    res.resume(); res.on('end', () => { out.requests[r.name] = res.statusCode; resolve(); });
  });
  req.on('error', (e) => { out.requests[r.name] = e.code; resolve(); });
  req.on('timeout', () => req.destroy(new Error('timeout')));
  req.end(r.body);
}));
Promise.all(pending).then(() => console.log(JSON.stringify(out)));
`;
