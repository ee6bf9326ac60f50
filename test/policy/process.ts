/**
 * The real `bin/tintype` as a child process, for the tests that must see the program operators
 * run: crash and restart (kill -9), the keys command, and every line the process writes.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { TEST_LEASE_ENV } from '../lib/leases.ts';

const TINTYPE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../bin/tintype');

/**
 * The command line of `bin/tintype <args>`. Through env(1) because tap's process tracking puts
 * its own loader into a child's NODE_OPTIONS, and that loader cannot load the extensionless
 * launcher; env execs, so the pid is the tintype process's own (kill -9 reaches it).
 */
function command(args: string[], launcher = TINTYPE): [string, string[]] {
  return ['/usr/bin/env', ['-u', 'NODE_OPTIONS', launcher, ...args]];
}

/** Settings a child inherits from nothing: only PATH, HOME and what the test gives it. */
function childEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, HOME: process.env.HOME, TINTYPE_LOG_LEVEL: 'debug', ...TEST_LEASE_ENV, ...env };
}

/** Runs `bin/tintype <args>` (or another checkout's, `launcher`) to its end; resolves with its exit code and output. `onStderr` sees stderr as it comes. */
export function runTintype(args: string[], env: Record<string, string>, onStderr?: (text: string) => void, launcher?: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(...command(args, launcher), { env: childEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString('utf8');
      onStderr?.(stderr);
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** A running `tintype policy`. */
export interface PolicyProcess {
  port: number;
  /** The renderers' listener (claim, release, settle). */
  settlePort: number;
  /** The admin listener (metrics, probes, /usage). */
  adminPort: number;
  pid: number;
  /** Everything the process wrote so far, stdout and stderr. */
  output(): string;
  /** Sends `signal` and waits for the process to be gone. */
  kill(signal: NodeJS.Signals): Promise<void>;
}

/**
 * Starts `bin/tintype policy` on a free port and waits for its `listening` line; `onEntry` sees
 * every log entry it writes before that. `launcher`: another checkout's bin/tintype (an earlier release).
 */
export function startPolicyProcess(env: Record<string, string>, onEntry?: (entry: Record<string, unknown>) => void, launcher?: string): Promise<PolicyProcess> {
  const child: ChildProcess = spawn(...command(['policy'], launcher), { env: childEnv({ PORT: '0', TINTYPE_ADMIN_PORT: '0', ...env }), stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let pending = '';
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return new Promise((resolve, reject) => {
    const fail = (why: string) => reject(new Error(`tintype policy ${why}:\n${out}`));
    child.once('error', (err) => fail(err.message));
    const early = (code: number | null, signal: string | null) => fail(`exited (${code ?? signal}) before listening`);
    child.once('exit', early);
    child.stdout!.on('data', (c: Buffer) => (out += c.toString('utf8')));
    child.stderr!.on('data', (c: Buffer) => {
      const text = c.toString('utf8');
      out += text;
      pending += text;
      let nl;
      while ((nl = pending.indexOf('\n')) >= 0) {
        const line = pending.slice(0, nl);
        pending = pending.slice(nl + 1);
        let entry: { event?: string; port?: number; settle_port?: number; admin_port?: number } | undefined;
        try {
          entry = JSON.parse(line);
        } catch {
          continue;
        }
        if (entry !== undefined) onEntry?.(entry);
        if (entry?.event === 'listening' && typeof entry.port === 'number') {
          child.off('exit', early);
          resolve({
            port: entry.port,
            settlePort: entry.settle_port ?? 0,
            adminPort: entry.admin_port ?? 0,
            pid: child.pid!,
            output: () => out,
            async kill(signal) {
              if (child.exitCode === null && child.signalCode === null) child.kill(signal);
              await exited;
            },
          });
        }
      }
    });
  });
}
