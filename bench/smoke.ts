/**
 * Every benchmark once, with few iterations (docs/performance.md "Running the benchmarks": benchmarks may run after the tests
 * as a smoke check): each must run to its end and print, as its last line, its JSON figures.
 * Nothing here judges a figure; it keeps the benchmarks from rotting between measurements.
 * `.ci/run` runs it after `npm test`.
 *
 * `npm run bench -- smoke`
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { printMachine, round2 } from './machine.ts';

const HERE = path.dirname(fileURLToPath(import.meta.url));

/** Each benchmark with the smallest arguments that still take every path it has. */
const RUNS: Array<[string, string[]]> = [
  ['guard', ['--seconds', '1', '--connections', '4']],
  ['authz', ['--seconds', '1', '--connections', '4', '--pg-connections', '4', '--keys', '8']],
  ['og', ['--cards', '24', '--baseline-cards', '4', '--concurrency', '4']],
  ['render', ['--renders', '4', '--memory-renders', '60', '--defaults-renders', '2', '--peer-renders', '0']],
  ['render', ['--phases', '--renders', '4']],
  ['edge', ['--seconds', '1', '--connections', '4', '--latency-requests', '100']],
  ['controller', ['--hours', '1']],
  ['usage', ['--sizes', '2000,20000', '--keys', '20', '--runs', '1']],
  ['ledger', ['--quick', '--year']],
  ['scale', ['--quick']],
  ['closed-leases', ['2000']],
  ['egress-audit', ['--rows', '2000']],
  ['policy-flood', ['--connections', '200', '--hold-s', '1']],
  ['soak', ['--clients', '4', '--seconds', '2', '--fuzz', '20', '--phase-seconds', '1']],
];

/** Runs one benchmark as `npm run bench` would; resolves with its exit code and output. */
function runBench(name: string, args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(HERE, 'run.ts'), name, ...args], {
      env: { ...process.env, NODE_OPTIONS: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (err += c.toString('utf8')));
    child.once('close', (code) => resolve({ code, out, err }));
  });
}

/** The last line a benchmark printed. */
function lastLine(out: string): string {
  return out.trimEnd().split('\n').at(-1) ?? '';
}

/** The benchmark's last line, if it is its JSON figures. */
function figuresOf(last: string): Record<string, unknown> | undefined {
  try {
    const parsed = JSON.parse(last) as unknown;
    return typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

printMachine();
const ran: Array<{ bench: string; args: string; seconds: number }> = [];
let failed = 0;
for (const [name, args] of RUNS) {
  const started = performance.now();
  const { code, out, err } = await runBench(name, args);
  const seconds = round2((performance.now() - started) / 1000);
  const last = lastLine(out);
  const figures = figuresOf(last);
  const expected = args.includes('--phases') ? `${name}-phases` : name;
  if (code !== 0 || figures?.bench !== expected) {
    failed += 1;
    console.log(`FAILED ${name} ${args.join(' ')}: exit ${code}, last line ${JSON.stringify(last)}`);
    console.log(err.trimEnd().split('\n').slice(-20).join('\n'));
  } else {
    console.log(`ok ${name} ${args.join(' ')} (${seconds} s)`);
  }
  ran.push({ bench: name, args: args.join(' '), seconds });
}
console.log(JSON.stringify({ bench: 'smoke', ran, failed }));
process.exit(failed === 0 ? 0 : 1);
