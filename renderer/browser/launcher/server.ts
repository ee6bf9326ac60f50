/**
 * The launcher's socket (docs/architecture.md §3): each connection is one Chromium, served by a
 * process of its own (session-main.ts) that is started for it and ends with it, so nothing a
 * browser could reach of its bridge outlives that browser (docs/security.md "The browser
 * container"). This process only accepts, bounds the browsers at once and reaps: it reads no byte
 * of a connection and none of Chromium's.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, rmSync } from 'node:fs';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { refuse, type LauncherLog, type SessionMessage, type SessionSettings } from './session.ts';

export type { LauncherLog } from './session.ts';

/** How long a session process has to end its browser once told to stop. */
const SESSION_STOP_MS = 5_000;

export interface LauncherOptions extends SessionSettings {
  socketPath: string;
  /** Browsers at once; a connection beyond them is refused. */
  maxBrowsers: number;
  /** The environment of each session process (Chromium's is built from it by an allow-list). */
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

/** session-main as this process runs modules: compiled beside it, or TypeScript through the same loader. */
const SESSION_MAIN = fileURLToPath(new URL(`./session-main${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url));

/** SIGKILLs a process group (Chromium leads one of its own). */
function killGroup(pid: number): void {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // the group is gone already
  }
}

export function createLauncher(options: LauncherOptions): Launcher {
  const sessions = new Map<ChildProcess, Promise<void>>();
  /** When the last connection opened or ended. */
  let lastChange = Date.now();
  const emptied: Array<() => void> = [];
  const settings: SessionSettings = {
    chromium: options.chromium,
    sandbox: options.sandbox,
    memoryReportMs: options.memoryReportMs,
    tmpDir: options.tmpDir,
    fontconfig: options.fontconfig,
  };
  const server = net.createServer({ pauseOnConnect: true }, (socket) => {
    if (sessions.size >= options.maxBrowsers) {
      socket.resume();
      refuse(socket, 'too many browsers');
      return;
    }
    const child = spawn(process.execPath, [...process.execArgv, SESSION_MAIN, JSON.stringify(settings)], {
      env: options.env,
      // fd 3: the connection; fd 4: its channel to this process.
      stdio: ['ignore', 'inherit', 'inherit', socket, 'ipc'],
    });
    // The session process holds the connection now.
    socket.destroy();
    const ended = watchSession(child, options.log);
    sessions.set(child, ended);
    lastChange = Date.now();
    void ended.then(() => {
      sessions.delete(child);
      lastChange = Date.now();
      if (sessions.size === 0) for (const resolve of emptied.splice(0)) resolve();
    });
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
      const ending = [...sessions.entries()].map(([child, ended]) => {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), SESSION_STOP_MS);
        return ended.finally(() => clearTimeout(timer));
      });
      await Promise.all([...ending, new Promise<void>((resolve) => server.close(() => resolve()))]);
      rmSync(options.socketPath, { force: true });
    },
    browsers: () => sessions.size,
    idle,
  };
}

/**
 * Resolves once a session process's browser is gone (it said so, or the process exited). What it
 * started goes with the process, however that ended: a session killed outright would leave its
 * Chromium's group running and its directory behind, so both are ended here on its exit.
 */
function watchSession(child: ChildProcess, log: LauncherLog): Promise<void> {
  let left: { pid: number; dir: string } | undefined;
  return new Promise<void>((resolve) => {
    child.on('message', (m: SessionMessage) => {
      if ('started' in m) left = { pid: m.started, dir: m.dir };
      if ('ended' in m) {
        left = undefined; // gone already: its pid may be another's by the time this process exits
        resolve();
      }
    });
    child.once('error', (err) => {
      log('launcher.session_failed', { detail: err.message });
      resolve();
    });
    child.once('exit', () => {
      if (left !== undefined) {
        killGroup(left.pid);
        rmSync(left.dir, { recursive: true, force: true });
      }
      resolve();
    });
  });
}
