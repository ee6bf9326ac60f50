/**
 * Shared parts of the pool's tests: the real guard (guard/) on a unix socket and a port,
 * opened only for the test's own site on 127.0.0.9 (GUARD_ALLOW_CIDRS), a resolver seam so
 * nothing leaves loopback, the site itself, a pool wired to both, and /proc readers.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import http from 'node:http';
import type net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'puppeteer-core';
import { createLogger, type Logger } from '../../../lib/log.ts';
import { createGuard, DnsFailure, type Guard } from '../../../guard/index.ts';
import { testGuardTokens } from '../../lib/leases.ts';
import { createBrowserPool, type BrowserPool, type BrowserPoolOptions, type GuardEndpoint, type RenderContext } from '../../../renderer/browser/index.ts';
import { processTree } from '../../../renderer/browser/process-tree.ts';
import { launcherReport } from '../../../renderer/browser/socket-transport.ts';
import { listenBesideService } from '../../lib/listen-beside.ts';

/** The tap test object, as far as these helpers use it. */
export interface Teardowns {
  teardown(fn: () => unknown): void;
}

/** The loopback address the test site listens on; the only range the guard is opened for. */
export const SITE_HOST = '127.0.0.9';
/** A name the guard's resolver seam maps to SITE_HOST (Chromium itself resolves nothing). */
export const SITE_NAME = 'site.test';

/** A logger that keeps its lines, for tests that read them (and so nothing floods tap's output). */
export function quietLogger(lines: string[] = []): Logger {
  return createLogger('test', { level: 'debug', sink: (line) => lines.push(line) });
}

export function tempDir(t: Teardowns, prefix = 'tintype-browser-'): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** The real guard, listening on a unix socket and on a loopback port. */
export async function startGuard(
  t: Teardowns,
  options: { allowCidrs?: readonly string[]; lines?: string[] } = {},
): Promise<{ guard: Guard; socketPath: string; url: string }> {
  const socketPath = path.join(tempDir(t, 'tintype-guard-'), 'guard.sock');
  const guard = createGuard({
    socket: socketPath,
    port: 0,
    host: '127.0.0.1',
    allowCidrs: options.allowCidrs ?? [`${SITE_HOST}/32`],
    tokens: testGuardTokens,
    logger: quietLogger(options.lines),
    resolve: async (name) => {
      if (name === SITE_NAME) return [SITE_HOST];
      throw new DnsFailure('ENOTFOUND');
    },
    stopGraceMs: 200,
  });
  await guard.start();
  t.teardown(() => guard.stop());
  return { guard, socketPath, url: `http://127.0.0.1:${guard.address().port}` };
}

/** The endpoint a pool is given for a guard in this process (the in-process tally). */
export function inProcess(g: { guard: Guard; socketPath: string; url: string }): GuardEndpoint {
  return { socketPath: g.socketPath, url: g.url, tokens: g.guard.tokens, takeTally: (token) => g.guard.settledTally(token) };
}

/** A test site: routes by path; counts requests per path and the connections still open. */
export interface Site {
  origin: string;
  port: number;
  hits(pathname: string): number;
  openConnections(): number;
  /** Requests that carried a Cookie header. */
  cookieRequests(): number;
}

export type Route = (req: http.IncomingMessage, res: http.ServerResponse) => void;

export async function startSite(t: Teardowns, routes: Record<string, Route>): Promise<Site> {
  const hits = new Map<string, number>();
  const sockets = new Set<net.Socket>();
  let cookieRequests = 0;
  const server = http.createServer((req, res) => {
    const pathname = new URL(req.url ?? '/', 'http://x').pathname;
    hits.set(pathname, (hits.get(pathname) ?? 0) + 1);
    if (req.headers.cookie !== undefined) cookieRequests += 1;
    const route = routes[pathname];
    if (route === undefined) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    route(req, res);
  });
  server.on('connection', (s: net.Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await listenBesideService(server, SITE_HOST);
  t.teardown(
    () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  );
  const port = (server.address() as net.AddressInfo).port;
  return {
    origin: `http://${SITE_HOST}:${port}`,
    port,
    hits: (p) => hits.get(p) ?? 0,
    openConnections: () => sockets.size,
    cookieRequests: () => cookieRequests,
  };
}

/** An HTML answer. */
export function html(body: string, headers: Record<string, string> = {}): Route {
  return (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', ...headers });
    res.end(body);
  };
}

type PoolConfig = BrowserPoolOptions['config'];

/** A started pool against `guard`, stopped at teardown. */
export async function startPool(
  t: Teardowns,
  /** Render tokens are made with the test key (test/lib/leases.ts) unless the endpoint says otherwise. */
  guard: Omit<GuardEndpoint, 'tokens'> & Partial<Pick<GuardEndpoint, 'tokens'>>,
  options: {
    config?: Partial<PoolConfig>;
    lines?: string[];
    timings?: BrowserPoolOptions['timings'];
    netnsUserNamespace?: boolean;
    launch?: BrowserPoolOptions['launch'];
    start?: boolean;
  } = {},
): Promise<BrowserPool> {
  const config: PoolConfig = {
    chromiumPath: undefined,
    slots: 1,
    renderTimeoutMs: 15_000,
    recycleAfterRenders: 1_000,
    browserMaxRssMb: 4_096,
    isolation: 'netns',
    guardAllowCidrs: [`${SITE_HOST}/32`],
    maxOutputBytes: 26_214_400,
    ...options.config,
  };
  const pool = createBrowserPool({
    config,
    logger: quietLogger(options.lines),
    guard: { tokens: testGuardTokens, ...guard },
    ...(options.timings === undefined ? {} : { timings: options.timings }),
    ...(options.netnsUserNamespace === undefined ? {} : { netnsUserNamespace: options.netnsUserNamespace }),
    ...(options.launch === undefined ? {} : { launch: options.launch }),
  });
  t.teardown(() => pool.stop());
  if (options.start !== false) await pool.start();
  return pool;
}

/** A render whose work is `run`, with a budget of `ms`. */
export function job<T>(run: (page: Page) => Promise<T>, ms = 15_000, signal?: AbortSignal) {
  return { deadline: Date.now() + ms, ...(signal === undefined ? {} : { signal }), run: async (ctx: RenderContext) => run(await ctx.page()) };
}

/**
 * The pid puppeteer launched for the browser serving `page` (in netns isolation: the launcher); in
 * pod isolation, Chromium's as the launcher (this test's grandchild) reported it.
 */
export function launchedPid(page: Page): number {
  const pid = page.browser().process()?.pid ?? launcherReport(page.browser())?.pid;
  if (pid === undefined) throw new Error('the browser has no process');
  return pid;
}

/** The Chromium browser process below `launched` (the first process whose command is Chromium). */
export function chromiumPid(launched: number): number {
  for (const s of processTree(launched)) {
    if (/chromium/.test(cmdline(s.pid)[0] ?? '')) return s.pid;
  }
  throw new Error('no Chromium process below the launched one');
}

/** A process's argument vector from /proc. */
export function cmdline(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter((a) => a !== '');
  } catch {
    return [];
  }
}

/** The namespace of `kind` a process is in (the /proc link text). */
export function namespaceOf(pid: number | 'self', kind: 'net' | 'user' | 'pid'): string {
  return readlinkSync(`/proc/${pid}/ns/${kind}`);
}

/** The network namespace a process is in. */
export function netNamespace(pid: number | 'self'): string {
  return namespaceOf(pid, 'net');
}

/** The network interfaces a process sees (its namespace's /proc/<pid>/net/dev). */
export function interfacesSeenBy(pid: number): string[] {
  return readFileSync(`/proc/${pid}/net/dev`, 'utf8')
    .split('\n')
    .slice(2)
    .map((line) => line.split(':')[0]!.trim())
    .filter((name) => name !== '');
}

/**
 * Children of this test process that are zombies (exited, never reaped): the ones the renderer
 * must reap. A zombie further down, under a live Chromium process, is that process's to reap
 * and is seen for a moment after a kill under load; counting it made the checks flaky.
 */
export function defunctChildren(): number[] {
  return processTree(process.pid)
    .filter((s) => s.ppid === process.pid && s.state === 'Z')
    .map((s) => s.pid);
}

/** Every pid of the browser tree below `launched`, now. */
export function treePids(launched: number): number[] {
  return processTree(launched).map((s) => s.pid);
}

/** True while a process exists in any state but zombie. */
export function alive(pid: number): boolean {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return text.slice(text.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

/** Waits until `check` holds (the test's own timeout bounds the wait; nothing is timed). */
export async function until(check: () => boolean | Promise<boolean>, stepMs = 50): Promise<void> {
  while (!(await check())) await new Promise((r) => setTimeout(r, stepMs));
}

/** A TCP listener on a refused address that counts accepted connections (must stay zero). */
export async function startCanary(t: Teardowns, host: string): Promise<{ port: number; accepted(): number }> {
  let accepted = 0;
  const server = (await import('node:net')).createServer((s) => {
    accepted += 1;
    s.end('HTTP/1.1 200 OK\r\ncontent-length: 6\r\nconnection: close\r\n\r\nCANARY');
  });
  await new Promise<void>((r) => server.listen(0, host, r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  return { port: (server.address() as net.AddressInfo).port, accepted: () => accepted };
}

/** The browser container's launcher, as the image starts it (renderer/browser/launcher/main.ts). */
export const LAUNCHER_MAIN = fileURLToPath(new URL('../../../renderer/browser/launcher/main.ts', import.meta.url));

/**
 * Runs `argv` (the launcher itself by default, or a wrapper that ends in it) with PATH and `env`,
 * collecting its output, stopped with SIGINT at teardown. Resolves once it listens or has exited:
 * the caller judges `child.exitCode`.
 */
export async function runLauncher(
  t: Teardowns,
  env: Record<string, string>,
  options: { argv?: string[]; cwd?: string } = {},
): Promise<{ child: ChildProcess; out: () => string }> {
  const argv = options.argv ?? [process.execPath, '--import', 'tsx', LAUNCHER_MAIN];
  let out = '';
  const child = spawn(argv[0]!, argv.slice(1), {
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    env: { PATH: process.env['PATH']!, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (c: Buffer) => (out += c.toString('utf8')));
  child.stderr!.on('data', (c: Buffer) => (out += c.toString('utf8')));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  t.teardown(async () => {
    child.kill('SIGINT');
    await exited;
  });
  await until(() => out.includes('"launcher.listening"') || child.exitCode !== null);
  return { child, out: () => out };
}
