/**
 * `bin/tintype start` for a benchmark: its own data directory, a plan no limit of which a bench
 * reaches, one key on it, and a client that calls the edge as a caller would.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const TINTYPE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../bin/tintype');
/** What bin/tintype runs on the checkout's Node; node runs it itself where it takes flags of its own. */
const LAUNCH = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../bin/launch.mjs');

/** The public port in `tintype start`'s JSON start-up line (stdout is a pipe; bin/commands/start.ts). */
export const START_PORT_PATTERN = /"url":"http:\/\/localhost:(\d+)"/;

/** `tintype start` as a child, profiled by node's --cpu-prof into `cpuProfileDir` when given. */
export function startArgs(cpuProfileDir: string | undefined): string[] {
  // Node refuses --cpu-prof in NODE_OPTIONS: a profiled service is started by node itself.
  const program = cpuProfileDir === undefined ? [TINTYPE] : [process.execPath, '--cpu-prof', `--cpu-prof-dir=${cpuProfileDir}`, LAUNCH];
  return ['-u', 'NODE_OPTIONS', ...program, 'start'];
}
const PLANS = { plans: { bench: { monthlyQuota: 1_000_000_000, perMinute: 1_000_000, concurrentRenders: 10_000 } } };

/** A running `tintype start` with a key. */
export interface Service {
  child: ChildProcess;
  base: string;
  /** The admin listener (metrics, probes). */
  admin: string;
  secret: string;
  stop(): Promise<void>;
}

/** Runs `tintype <args>` to its end with `env`; resolves with its stdout. */
function tintype(args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    const c = spawn('/usr/bin/env', ['-u', 'NODE_OPTIONS', TINTYPE, ...args], { env, stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    c.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')));
    c.once('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`tintype ${args[0]} exited ${code}`))));
  });
}

/**
 * Starts `tintype start` on free ports with `slots` slots and `chromium`; resolves once it answers.
 * `cpuProfileDir` has node write a V8 CPU profile of the service there at its exit.
 */
export async function startService(chromium: string, slots: number, cpuProfileDir?: string): Promise<Service> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tintype-bench-service-'));
  const plans = path.join(dir, 'plans.json');
  writeFileSync(plans, JSON.stringify(PLANS));
  const env = {
    PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/root', TINTYPE_DATA_DIR: path.join(dir, 'data'),
    TINTYPE_PLANS: plans, CHROMIUM_PATH: chromium, TINTYPE_SLOTS: String(slots), TINTYPE_LOG_LEVEL: 'error',
  };
  const child = spawn('/usr/bin/env', startArgs(cpuProfileDir), { env: { ...env, PORT: '0', TINTYPE_ADMIN_PORT: '0' }, stdio: ['ignore', 'pipe', 'ignore'] });
  const { port, admin } = await new Promise<{ port: number; admin: string }>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString('utf8');
      const m = START_PORT_PATTERN.exec(out);
      const a = /"admin":"(http:\/\/127\.0\.0\.1:\d+)"/.exec(out);
      if (m !== null && a !== null) resolve({ port: Number(m[1]), admin: a[1]! });
    });
    child.once('exit', (code) => reject(new Error(`tintype start exited (${code}) before listening`)));
  });
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const secret = /^secret: (\S+)$/m.exec(await tintype(['keys', 'create', '--plan', 'bench'], env))![1]!;
    return { child, base: `http://127.0.0.1:${port}`, admin, secret, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** One call at the spec's defaults (`{html}` alone) through the edge; resolves to the answer's size. */
export async function serviceRender(service: Service, kind: 'png' | 'pdf', html: string): Promise<number> {
  const res = await fetch(`${service.base}/v1/${kind === 'png' ? 'html-to-image' : 'pdf'}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${service.secret}` },
    body: JSON.stringify({ html }),
  });
  const bytes = await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`${kind} answered ${res.status}: ${Buffer.from(bytes).toString('utf8').slice(0, 200)}`);
  return bytes.byteLength;
}
