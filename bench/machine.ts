/** The machine and versions every benchmark prints before its figures (docs/performance.md "Running the benchmarks"). */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { descendants } from '../test/renderer/server/procs.ts';

export interface Machine {
  cores: number;
  memoryGiB: number;
  cpu: string;
  node: string;
  chromium?: string;
}

/** Describes this machine; `chromiumPath` adds that binary's version. */
export function machine(chromiumPath?: string): Machine {
  const m: Machine = {
    cores: os.availableParallelism(),
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    cpu: os.cpus()[0]?.model ?? 'unknown',
    node: process.version,
  };
  if (chromiumPath !== undefined) {
    try {
      m.chromium = execFileSync(chromiumPath, ['--version'], { encoding: 'utf8' }).trim();
    } catch {
      m.chromium = 'unknown';
    }
  }
  return m;
}

/** Prints the machine line; call first in every benchmark. */
export function printMachine(chromiumPath?: string): Machine {
  const m = machine(chromiumPath);
  console.log(`machine: ${m.cores} cores, ${m.memoryGiB} GiB, ${m.cpu}; node ${m.node}${m.chromium ? `; ${m.chromium}` : ''}`);
  return m;
}

/** Percentile of a list of samples (nearest rank). */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

/** Rounds to two decimals for the JSON line. */
export function round2(n: number): number {
  return Math.round(n * 100) / 100;
}

/** Kernel clock ticks per second (getconf CLK_TCK, 100 on Linux). */
const CLOCK_TICKS = 100;

/**
 * CPU seconds (user + system) a process has used so far, from /proc; with `reaped`, also what
 * the children it has waited for used (stat(5) cutime and cstime).
 */
export function cpuSecondsOf(pid: number, reaped = false): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields counted from the state field (3 in stat(5)): utime 14, stime 15, cutime 16, cstime 17.
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ').map(Number);
  return (f[11]! + f[12]! + (reaped ? f[13]! + f[14]! : 0)) / CLOCK_TICKS;
}

/**
 * CPU seconds a process tree has used so far: each live member's own and its reaped children's,
 * so a process that ended (a Chromium renderer, reaped by its zygote) still counts. Differences
 * of two readings are what the tree spent in between.
 */
export function treeCpuSeconds(pid: number): number {
  let total = 0;
  for (const p of [pid, ...descendants(pid)]) {
    try {
      total += cpuSecondsOf(p, true);
    } catch {
      // ended meanwhile: its time moves to its parent's reaped count
    }
  }
  return total;
}
