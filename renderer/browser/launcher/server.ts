/**
 * The launcher's socket (docs/architecture.md §3): each connection is one Chromium. The renderer
 * asks with its switches, the launcher starts Chromium on a pipe (`--remote-debugging-pipe`) and
 * passes CDP's frames between the pipe and the connection unchanged, adding only its own
 * `Tintype.*` frames (launched, refused, memory). When either side ends, the other goes: the
 * renderer gone kills that Chromium, a Chromium gone closes its connection.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
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

export interface LauncherOptions {
  socketPath: string;
  chromium: string;
  sandbox: SandboxVerdict;
  /** Browsers at once; a connection beyond them is refused. */
  maxBrowsers: number;
  memoryReportMs: number;
  /** Where profiles are made (TMPDIR). */
  tmpDir: string;
  /** Passed through to Chromium by the allow-list of environment.ts. */
  env: NodeJS.ProcessEnv;
  log: LauncherLog;
}

export interface Launcher {
  /** Resolves once the socket listens. */
  start(): Promise<void>;
  /** Kills every Chromium, closes the socket. */
  stop(): Promise<void>;
  /** Browsers running now. */
  browsers(): number;
  /**
   * Resolves once no browser has run for `quietMs` straight (every connection ended, and none
   * opened since); with 0, as soon as none runs.
   */
  idle(quietMs?: number): Promise<void>;
}

export function createLauncher(options: LauncherOptions): Launcher {
  const sessions = new Set<Session>();
  /** When the last connection opened or ended. */
  let lastChange = Date.now();
  const emptied: Array<() => void> = [];
  const server = net.createServer((socket) => {
    if (sessions.size >= options.maxBrowsers) {
      refuse(socket, 'too many browsers');
      return;
    }
    const session = new Session(socket, options, () => {
      sessions.delete(session);
      lastChange = Date.now();
      if (sessions.size === 0) for (const resolve of emptied.splice(0)) resolve();
    });
    sessions.add(session);
    lastChange = Date.now();
  });
  const idle = async (quietMs = 0): Promise<void> => {
    for (;;) {
      if (sessions.size > 0) await new Promise<void>((resolve) => emptied.push(resolve));
      const left = lastChange + quietMs - Date.now();
      if (sessions.size === 0 && left <= 0) return;
      if (left > 0) await new Promise((r) => setTimeout(r, left));
    }
  };
  return {
    async start() {
      rmSync(options.socketPath, { force: true });
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(options.socketPath, () => resolve());
      });
      // The renderer's container shares the pod's group (fsGroup), not this uid.
      chmodSync(options.socketPath, 0o660);
    },
    async stop() {
      for (const s of sessions) s.end('launcher stopping');
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(options.socketPath, { force: true });
    },
    browsers: () => sessions.size,
    idle,
  };
}

function refuse(socket: net.Socket, reason: string): void {
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

/** One connection and its Chromium. */
class Session {
  private child: ChildProcess | undefined;
  private profile: string | undefined;
  private ended = false;
  private memoryTimer: NodeJS.Timeout | undefined;
  /** A memory frame waiting for the end of the frame Chromium is writing. */
  private memoryDue: Buffer | undefined;
  /** True when the last byte passed from Chromium ended a frame. */
  private atBoundary = true;

  constructor(
    private readonly socket: net.Socket,
    private readonly options: LauncherOptions,
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
    const profile = mkdtempSync(path.join(tmpDir, 'tintype-profile-'));
    this.profile = profile;
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
      env: chromiumEnvironment(this.options.env, tmpDir),
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

  /** Ends the session: Chromium's group killed, the connection ended after what was written, the profile removed. */
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
    const profile = this.profile;
    if (profile !== undefined) {
      // Removed once Chromium is gone (it writes there until it dies).
      if (child === undefined || child.exitCode !== null || child.signalCode !== null) rmSync(profile, { recursive: true, force: true });
      else child.once('exit', () => rmSync(profile, { recursive: true, force: true }));
    }
    this.onEnd();
  }
}
