/**
 * One browser of the launcher (docs/architecture.md §3), run in a process of its own that ends
 * with it (session-main.ts): reads the renderer's launch request, starts Chromium on a pipe
 * (`--remote-debugging-pipe`) and passes CDP's frames between the pipe and the connection
 * unchanged, adding only its own `Tintype.*` frames (launched, refused, memory). When either side
 * ends, the other goes. Chromium's profile, HOME and TMPDIR are one directory of its own, removed
 * with it (docs/security.md "The browser container").
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import type net from 'node:net';
import path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { chromiumEnvironment } from './environment.ts';
import { isHeadlessShell } from './executable.ts';
import { frame, FrameSplitter, LAUNCHED, MEMORY, REFUSED, type Launched } from './framing.ts';
import { treeMemoryBytes } from './proc.ts';
import type { SandboxVerdict } from './sandbox.ts';
import { refusedSwitch } from './switches.ts';

/** The largest launch request accepted (its switches; a few KiB in practice). */
const MAX_REQUEST_BYTES = 64 * 1024;
/** How long a connection may take to send its launch request. */
const REQUEST_TIMEOUT_MS = 10_000;

/** A one-line event of the launcher's log. */
export type LauncherLog = (event: string, fields?: Record<string, unknown>) => void;

/** What a session process tells the launcher: Chromium's pid once it started; that the browser is gone. */
export type SessionMessage = { started: number; dir: string } | { ended: true };

/** What a session is started with: decided once by the launcher. */
export interface SessionSettings {
  chromium: string;
  sandbox: SandboxVerdict;
  memoryReportMs: number;
  /** Where the browser's own directory is made (TMPDIR). */
  tmpDir: string;
  /** The fontconfig file Chromium reads (fontconfig.ts): the system's, with no user location. */
  fontconfig: string;
}

export interface SessionOptions extends SessionSettings {
  /** Passed through to Chromium by the allow-list of environment.ts. */
  env: NodeJS.ProcessEnv;
  log: LauncherLog;
  /**
   * Told Chromium's pid and its directory once it started: the launcher kills the group and
   * removes the directory if this process is killed before it could.
   */
  started(pid: number, dir: string): void;
}

/** Answers with a refusal and closes. */
export function refuse(socket: net.Socket, reason: string): void {
  socket.on('error', () => socket.destroy());
  socket.end(frame(JSON.stringify({ method: REFUSED, params: { reason } })));
}

/** Copies `from` to `to` minding back-pressure, through `write` (which may add frames). */
function forward(from: Readable, to: Writable, write: (chunk: Buffer) => boolean): void {
  from.on('data', (chunk: Buffer) => {
    if (!write(chunk)) {
      from.pause();
      to.once('drain', () => from.resume());
    }
  });
}

/** SIGKILLs Chromium's process group (it leads one of its own). */
function killGroup(child: ChildProcess): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    // the group is gone already
  }
}

/** One connection and its Chromium; `onEnd` runs once both are gone and its directory is removed. */
export class Session {
  private child: ChildProcess | undefined;
  /** The browser's own directory: profile, HOME and TMPDIR. */
  private dir: string | undefined;
  private ended = false;
  private memoryTimer: NodeJS.Timeout | undefined;
  /** A memory frame waiting for the end of the frame Chromium is writing. */
  private memoryDue: Buffer | undefined;
  /** True when the last byte passed from Chromium ended a frame. */
  private atBoundary = true;

  constructor(
    private readonly socket: net.Socket,
    private readonly options: SessionOptions,
    private readonly onEnd: () => void,
  ) {
    socket.on('error', () => this.end('renderer connection failed'));
    socket.on('close', () => this.end('renderer disconnected'));
    const timer = setTimeout(() => this.refuse('no launch request in time'), REQUEST_TIMEOUT_MS);
    const splitter = new FrameSplitter(MAX_REQUEST_BYTES);
    const onData = (chunk: Buffer): void => {
      const end = chunk.indexOf(0);
      let request: string | undefined;
      try {
        [request] = splitter.push(end === -1 ? chunk : chunk.subarray(0, end + 1));
      } catch {
        clearTimeout(timer);
        this.refuse('launch request too large');
        return;
      }
      if (end === -1) return;
      clearTimeout(timer);
      socket.off('data', onData);
      socket.pause();
      this.launch(request ?? '', chunk.subarray(end + 1));
    };
    socket.on('data', onData);
  }

  private refuse(reason: string): void {
    if (this.ended) return;
    this.options.log('launcher.refused', { reason });
    this.ended = true;
    this.onEnd();
    // Whatever else it sends is read and dropped until it goes.
    this.socket.removeAllListeners('data');
    this.socket.resume();
    refuse(this.socket, reason);
  }

  private launch(request: string, rest: Buffer): void {
    let args: unknown;
    try {
      args = (JSON.parse(request) as { args?: unknown }).args;
    } catch {
      return this.refuse('the launch request is not JSON');
    }
    const why = refusedSwitch(args);
    if (why !== undefined) return this.refuse(why);
    const { chromium, sandbox, tmpDir } = this.options;
    const dir = mkdtempSync(path.join(tmpDir, 'tintype-browser-'));
    this.dir = dir;
    const [profile, home, tmp] = ['profile', 'home', 'tmp'].map((d) => path.join(dir, d)) as [string, string, string];
    for (const d of [profile, home, tmp]) mkdirSync(d, { mode: 0o700 });
    const argv = [
      ...(args as string[]),
      isHeadlessShell(chromium) ? '--headless' : '--headless=new',
      `--user-data-dir=${profile}`,
      '--remote-debugging-pipe',
      ...(sandbox.on ? [] : ['--no-sandbox']),
      'about:blank',
    ];
    const child = spawn(chromium, argv, {
      // fd 3: CDP in, fd 4: CDP out, as --remote-debugging-pipe expects.
      stdio: ['ignore', 'ignore', 'ignore', 'pipe', 'pipe'],
      env: chromiumEnvironment(this.options.env, { home, tmp, fontconfig: this.options.fontconfig }),
      detached: true,
    });
    this.child = child;
    child.once('error', (err) => this.end(`Chromium did not start: ${err.message}`));
    // Its processes go with it (one may still hold the pipe); the connection ends once the pipe
    // has given everything Chromium wrote.
    child.once('exit', () => killGroup(child));
    child.once('close', (code, signal) => this.end(`Chromium exited (${signal ?? code})`));
    if (child.pid === undefined) return; // 'error' follows
    const toChromium = child.stdio[3] as Writable;
    const fromChromium = child.stdio[4] as Readable;
    toChromium.on('error', () => this.end('Chromium pipe failed'));
    fromChromium.on('error', () => this.end('Chromium pipe failed'));
    const launched: Launched = sandbox.on ? { pid: child.pid, sandbox: true } : { pid: child.pid, sandbox: false, why: sandbox.why };
    this.socket.write(frame(JSON.stringify({ method: LAUNCHED, params: launched })));
    this.options.log('launcher.browser_started', { pid: child.pid, sandbox: sandbox.on });
    this.options.started(child.pid, dir);
    if (rest.length > 0) toChromium.write(rest);
    forward(this.socket, toChromium, (c) => toChromium.write(c));
    forward(fromChromium, this.socket, (c) => this.fromChromium(c));
    this.socket.resume();
    this.memoryTimer = setInterval(() => void this.reportMemory(), this.options.memoryReportMs);
  }

  /** Chromium's bytes to the renderer, with a due memory frame put between two of its frames. */
  private fromChromium(chunk: Buffer): boolean {
    const due = this.memoryDue;
    if (due === undefined || chunk.length === 0) {
      if (chunk.length > 0) this.atBoundary = chunk[chunk.length - 1] === 0;
      return this.socket.write(chunk);
    }
    if (this.atBoundary) {
      this.memoryDue = undefined;
      this.socket.write(due);
      this.atBoundary = chunk[chunk.length - 1] === 0;
      return this.socket.write(chunk);
    }
    const end = chunk.indexOf(0);
    if (end === -1) return this.socket.write(chunk);
    this.memoryDue = undefined;
    this.socket.write(chunk.subarray(0, end + 1));
    this.socket.write(due);
    this.atBoundary = chunk[chunk.length - 1] === 0;
    return this.socket.write(chunk.subarray(end + 1));
  }

  private async reportMemory(): Promise<void> {
    const pid = this.child?.pid;
    if (pid === undefined || this.ended) return;
    const bytes = await treeMemoryBytes(pid).catch(() => undefined);
    if (bytes === undefined || this.ended) return;
    const message = frame(JSON.stringify({ method: MEMORY, params: { bytes } }));
    if (this.atBoundary) this.socket.write(message);
    else this.memoryDue = message;
  }

  /** Ends the session: Chromium's group killed, the connection ended after what was written, its directory removed. */
  end(reason: string): void {
    if (this.ended) return;
    this.ended = true;
    clearInterval(this.memoryTimer);
    const child = this.child;
    if (child?.pid !== undefined) {
      killGroup(child);
      this.options.log('launcher.browser_ended', { pid: child.pid, reason });
    }
    this.socket.end();
    const dir = this.dir;
    const done = (): void => {
      if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
      this.onEnd();
    };
    // Removed once Chromium is gone (it writes there until it dies).
    if (child === undefined || child.pid === undefined || child.exitCode !== null || child.signalCode !== null) done();
    else child.once('exit', done);
  }
}
