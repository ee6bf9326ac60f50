/** The machine and versions every benchmark prints before its figures (DESIGN.md §7). */
import { execFileSync } from 'node:child_process';
import os from 'node:os';

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
