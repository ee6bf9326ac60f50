/**
 * The browser container's launcher (renderer/browser/launcher/main.ts; docs/architecture.md §3),
 * run as the image runs it and spoken to as the renderer speaks to it: NUL-delimited frames on its
 * unix socket. Each connection gets a Chromium of its own, started only with switches the launcher
 * accepts and none of its environment but the locale; CDP crosses unchanged; the renderer's going
 * kills its Chromium, a Chromium's going closes its connection; beyond the bound, no browser; on
 * SIGTERM it serves until the renderer lets go (no connection for a quiet spell).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import t from 'tap';
import { frame, FrameSplitter } from '../../../renderer/browser/launcher/framing.ts';
import { refusedSwitch } from '../../../renderer/browser/launcher/switches.ts';
import { browserSwitches } from '../../../renderer/browser/pod-isolation.ts';
import { ServiceError } from '../../../lib/errors.ts';
import { alive, html, inProcess, job, LAUNCHER_MAIN, launchedPid, runLauncher, startGuard, startPool, startSite, tempDir, until, type Teardowns } from './helpers.ts';


/** A launcher started as the image starts it (no arguments), with `env`. */
async function startLauncher(
  t: Teardowns,
  env: Record<string, string> = {},
  at?: string,
): Promise<{ socket: string; child: ChildProcess; out: () => string }> {
  const dir = tempDir(t, 'tintype-launcher-');
  const socket = at ?? path.join(dir, 'cdp.sock');
  const { child, out } = await runLauncher(t, { TMPDIR: dir, TINTYPE_BROWSER_SOCKET: socket, ...env });
  if (child.exitCode !== null) throw new Error(`the launcher exited: ${out()}`);
  return { socket, child, out };
}

/** A connection speaking the launcher's framing: frames received so far, and how to send one. */
async function connect(socketPath: string) {
  const socket = net.connect({ path: socketPath });
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const frames: Array<Record<string, any>> = [];
  const splitter = new FrameSplitter();
  let closed = false;
  socket.on('data', (c: Buffer) => {
    for (const m of splitter.push(c)) frames.push(JSON.parse(m) as Record<string, any>);
  });
  socket.on('error', () => {});
  socket.on('close', () => (closed = true));
  return {
    socket,
    frames,
    closed: () => closed,
    send: (message: unknown) => socket.write(frame(JSON.stringify(message))),
    /** The first frame whose method is `method` (or whose id is `id`). */
    next: async (match: { method?: string; id?: number }) => {
      await until(() => closed || frames.some((f) => (match.method !== undefined ? f['method'] === match.method : f['id'] === match.id)));
      return frames.find((f) => (match.method !== undefined ? f['method'] === match.method : f['id'] === match.id));
    },
  };
}

const SWITCHES = browserSwitches('127.0.0.1:9');

/** A connection that has asked for a Chromium with SWITCHES and been told its pid. */
async function launched(socketPath: string) {
  const c = await connect(socketPath);
  c.send({ args: SWITCHES });
  const pid = (await c.next({ method: 'Tintype.launched' }))!['params']['pid'] as number;
  return { c, pid };
}

t.test('the switches it accepts: the walls and puppeteer defaults, nothing that opens another way in', async (t) => {
  t.equal(refusedSwitch(SWITCHES), undefined, "the renderer's own request is accepted whole");
  const refused: Array<[string, string[]]> = [
    ['a debugging port (CDP on the pod loopback)', ['--remote-debugging-port=9222']],
    ['a debugging address', ['--remote-debugging-address=0.0.0.0']],
    ['a command prefix (another program)', ['--renderer-cmd-prefix=/bin/sh -c id']],
    ['the sandbox switched off by the asker', ['--no-sandbox']],
    ['a profile of the asker', ['--user-data-dir=/tmp']],
    ['a proxy elsewhere than loopback', ['--proxy-server=http://10.0.0.1:3128']],
    ['a proxy with a scheme of its own', ['--proxy-server=socks5://127.0.0.1:1080']],
    ['a proxy port out of range', ['--proxy-server=http://127.0.0.1:65536']],
    ['a URL to open', ['file:///etc/passwd']],
    ['a switch with a newline', ['--hide-scrollbars\n--no-sandbox']],
    ['not a list', 'x' as unknown as string[]],
  ];
  for (const [name, args] of refused) t.type(refusedSwitch(args), 'string', name);
  t.equal(refusedSwitch(['--proxy-server=http://127.0.0.1:65535']), undefined, 'the highest port');
});

t.test('one Chromium per connection, CDP unchanged, its memory reported, none of the environment', async (t) => {
  const marker = `marker-${Math.random().toString(36).slice(2)}`;
  const l = await startLauncher(t, { TINTYPE_LEASE_SECRET: marker, REDIS_URL: `redis://${marker}`, TZ: 'UTC', TINTYPE_BROWSER_MEMORY_REPORT_MS: '200' });
  t.equal(statSync(l.socket).mode & 0o777, 0o660, 'the socket: its user and the pod group only');
  const c = await connect(l.socket);
  c.send({ args: SWITCHES });
  const launched = await c.next({ method: 'Tintype.launched' });
  t.ok(launched, 'launched');
  const pid = launched!['params']['pid'] as number;
  t.ok(alive(pid), 'Chromium runs');
  t.type(launched!['params']['sandbox'], 'boolean', 'it says whether the sandbox is on');
  if (process.getuid?.() === 0) t.match(launched!['params']['why'], /root/, 'as root: off, saying why');
  c.send({ id: 1, method: 'Browser.getVersion' });
  const version = await c.next({ id: 1 });
  t.match(version?.['result']?.['product'], /Chrome|HeadlessChrome/, 'CDP answered through the socket');
  const memory = await c.next({ method: 'Tintype.memory' });
  t.ok((memory?.['params']['bytes'] as number) > 1024 * 1024, "Chromium's memory, read where it runs");
  const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  t.ok(argv.includes('--remote-debugging-pipe'), 'CDP on the pipe');
  t.notOk(argv.some((a) => a.startsWith('--remote-debugging-port')), 'never on a port');
  const environ = readFileSync(`/proc/${pid}/environ`, 'utf8');
  t.notOk(environ.includes(marker), "none of the launcher's variables but the locale");
  t.match(environ, /(^|\0)TZ=UTC(\0|$)/, 'the time zone passes');

  t.test('the renderer going kills its Chromium', async (t) => {
    c.socket.destroy();
    await until(() => !alive(pid));
    t.pass('Chromium is gone');
  });
});

t.test('a Chromium that ends closes its connection; the launcher serves on', async (t) => {
  const l = await startLauncher(t);
  const { c, pid } = await launched(l.socket);
  c.send({ id: 7, method: 'Browser.close' });
  await until(() => c.closed());
  t.pass('the connection closed');
  await until(() => !alive(pid));
  const again = await connect(l.socket);
  again.send({ args: SWITCHES });
  t.ok(await again.next({ method: 'Tintype.launched' }), 'a new connection gets a new Chromium');
  again.socket.destroy();
});

t.test('refused: a switch not accepted, a request that is not one, a connection beyond the bound', async (t) => {
  const l = await startLauncher(t, { TINTYPE_BROWSER_CONNECTIONS: '2' });
  const bad = await connect(l.socket);
  bad.send({ args: [...SWITCHES, '--remote-debugging-port=9222'] });
  t.match((await bad.next({ method: 'Tintype.refused' }))?.['params']['reason'], /remote-debugging-port/);
  await until(() => bad.closed());
  t.notOk(l.out().includes('"launcher.browser_started"'), 'no Chromium was started for it');
  const junk = await connect(l.socket);
  junk.socket.write('not json\0');
  t.ok(await junk.next({ method: 'Tintype.refused' }), 'not JSON: refused');
  const endless = await connect(l.socket);
  endless.socket.write(Buffer.alloc(70 * 1024, 0x20));
  t.match((await endless.next({ method: 'Tintype.refused' }))?.['params']['reason'], /too large/, 'a request that never ends: refused past 64 KiB');
  const a = await connect(l.socket);
  a.send({ args: SWITCHES });
  const b = await connect(l.socket);
  b.send({ args: SWITCHES });
  await Promise.all([a.next({ method: 'Tintype.launched' }), b.next({ method: 'Tintype.launched' })]);
  t.ok(a.frames.length > 0 && b.frames.length > 0, 'two browsers at once (a replacement beside a draining one)');
  const third = await connect(l.socket);
  third.send({ args: SWITCHES });
  t.match((await third.next({ method: 'Tintype.refused' }))?.['params']['reason'], /too many/, 'the third: refused');
  a.socket.destroy();
  b.socket.destroy();
});

t.test('on SIGTERM (the pod deleted) it serves on until the renderer lets go, then stops: its socket removed', async (t) => {
  const l = await startLauncher(t);
  const { c, pid } = await launched(l.socket);
  l.child.kill('SIGTERM');
  await until(() => l.out().includes('"launcher.stopping"'));
  // The renderer, still draining, recycles its browser: the new one starts beside the old.
  const { c: d, pid: next } = await launched(l.socket);
  c.socket.destroy();
  await until(() => !alive(pid));
  t.ok(alive(next) && l.child.exitCode === null, 'a browser still held: it serves on');
  // The browser is lost while the renderer drains: for a moment no connection, then its replacement dials in.
  d.socket.destroy();
  await until(() => !alive(next));
  await new Promise((r) => setTimeout(r, 300));
  t.equal(l.child.exitCode, null, 'no connection for a moment: it serves on');
  const { c: e, pid: replacement } = await launched(l.socket);
  t.ok(alive(replacement), 'the replacement is served');
  // The renderer exits: its last connection ends and none follows.
  e.socket.destroy();
  await until(() => l.child.exitCode !== null);
  t.equal(l.child.exitCode, 0, 'the last connection ended and none came: it stopped');
  await until(() => !alive(replacement));
  t.notOk(existsSync(l.socket), 'the socket is gone');
});

t.test('on SIGINT it stops at once: every Chromium killed', async (t) => {
  const l = await startLauncher(t);
  const { pid } = await launched(l.socket);
  l.child.kill('SIGINT');
  await until(() => l.child.exitCode !== null);
  t.equal(l.child.exitCode, 0);
  await until(() => !alive(pid));
  t.notOk(existsSync(l.socket), 'the socket is gone');
});

t.test("a renderer's own launcher (TINTYPE_BROWSER_STOP_WITH_STDIN) stops when its stdin ends, however the renderer ended", async (t) => {
  const dir = tempDir(t, 'tintype-launcher-');
  const child = spawn(process.execPath, ['--import', 'tsx', LAUNCHER_MAIN], {
    env: { PATH: process.env['PATH']!, TMPDIR: dir, TINTYPE_BROWSER_SOCKET: path.join(dir, 'cdp.sock'), TINTYPE_BROWSER_STOP_WITH_STDIN: '1' },
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString('utf8')));
  t.teardown(() => child.kill('SIGKILL'));
  await until(() => out.includes('"launcher.listening"'));
  const { pid } = await launched(path.join(dir, 'cdp.sock'));
  child.stdin!.destroy();
  await until(() => child.exitCode !== null);
  t.equal(child.exitCode, 0, 'it stopped');
  await until(() => !alive(pid));
  t.pass('and its Chromium with it');
});

t.test('without a socket to make, or a Chromium, it stops at once saying why', async (t) => {
  const run = (env: Record<string, string>) =>
    new Promise<{ code: number | null; out: string }>((resolve) => {
      let out = '';
      const child = spawn(process.execPath, ['--import', 'tsx', LAUNCHER_MAIN], { env: { PATH: process.env['PATH']!, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
      child.stdout!.on('data', (c: Buffer) => (out += c.toString('utf8')));
      child.once('exit', (code) => resolve({ code, out }));
    });
  const noSocket = await run({});
  t.not(noSocket.code, 0);
  t.match(noSocket.out, /TINTYPE_BROWSER_SOCKET/);
  const noChromium = await run({ TINTYPE_BROWSER_SOCKET: path.join(tempDir(t), 's.sock'), CHROMIUM_PATH: '/nonexistent/chromium' });
  t.not(noChromium.code, 0);
  t.match(noChromium.out, /launcher\.no_chromium/);
});

t.test('self-contained: it imports only node: modules and its own folder (the browser image holds nothing else)', async (t) => {
  const { readdirSync } = await import('node:fs');
  const dir = path.dirname(LAUNCHER_MAIN);
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.ts'))) {
    const text = readFileSync(path.join(dir, file), 'utf8');
    for (const m of text.matchAll(/(?:from|import)\s*\(?\s*'([^']+)'/g)) {
      const spec = m[1]!;
      t.ok(spec.startsWith('node:') || /^\.\/[a-z-]+\.ts$/.test(spec), `${file}: ${spec}`);
    }
  }
});

t.test('frames split wherever the chunks fall, a character across two chunks included', async (t) => {
  const bytes = Buffer.concat([frame('{"a":"é"}'), frame('{"b":2}'), Buffer.from('{"c"')]);
  const s = new FrameSplitter();
  const got: string[] = [];
  for (let i = 0; i < bytes.length; i++) got.push(...s.push(bytes.subarray(i, i + 1)));
  t.same(got, ['{"a":"é"}', '{"b":2}']);
  t.equal(s.held, 4, 'the unended frame is held');
});

t.test('a renderer and a launcher apart (TINTYPE_BROWSER_SOCKET): it waits for the socket, renders through it, a Chromium lost is a render_failed and a new browser', async (t) => {
  const g = await startGuard(t);
  const site = await startSite(t, { '/': html('<!doctype html><title>apart</title><p>apart</p>'), '/hang': () => {} });
  const socket = path.join(tempDir(t, 'tintype-apart-'), 'cdp.sock');
  const lines: string[] = [];
  const starting = startPool(t, inProcess(g), { config: { isolation: 'pod', browserSocket: socket }, lines });
  await until(() => lines.some((l) => l.includes('"browser.waiting_for_launcher"')));
  await startLauncher(t, {}, socket);
  const pool = await starting;
  t.ok(pool.selfTestPassed(), 'the self-test passed through the launcher');
  const title = await pool.render(job(async (page) => (await page.goto(`${site.origin}/`, { waitUntil: 'load' }), page.title())));
  t.equal(title.value, 'apart');
  // Chromium's pid is the launcher's to know: here it runs in this PID namespace, so it can be killed.
  let chromium = 0;
  const r = pool.render(job(async (page) => {
    chromium = launchedPid(page);
    await page.goto(`${site.origin}/hang`, { waitUntil: 'load', timeout: 0 });
  }, 120_000));
  await until(() => chromium > 0 && site.hits('/hang') > 0);
  process.kill(chromium, 'SIGKILL');
  const failed = await r.then(() => 'ok', (e: unknown) => (e instanceof ServiceError ? e.code : String(e)));
  t.equal(failed, 'render_failed', 'the render in flight failed at once');
  const next = await pool.render(job(async (page) => launchedPid(page)));
  t.not(next.value, chromium, 'a new browser serves');
  t.ok(pool.stats().restarts >= 1);
  t.equal(typeof pool.stats().sandbox, 'boolean');
});
