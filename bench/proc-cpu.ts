/**
 * CPU seconds of a process tree split by the kind of process, from /proc (bench/render: what a
 * render costs where). Each live member's own time goes to its kind; the time of children it has
 * already reaped goes to the kind those children were: a zygote reaps renderer processes, a
 * Chromium browser process its GPU and utility processes, anything else a whole Chromium that
 * has ended (a peer that launches one per request).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { descendants } from '../test/renderer/server/procs.ts';

/** The kinds CPU is split into. */
export const PROC_KINDS = ['node', 'browser', 'renderer', 'gpu_utility', 'ended_chromium', 'other'] as const;
export type ProcKind = (typeof PROC_KINDS)[number];
export type CpuByKind = Record<ProcKind, number>;

/** Kernel clock ticks per second (getconf CLK_TCK, 100 on Linux). */
const CLOCK_TICKS = 100;

/** The last kind read of each process. */
const seen = new Map<number, ProcKind | 'zygote'>();

/** A process's kind; while it exits (its command line already gone), the kind it had. */
function kindOf(pid: number): ProcKind | 'zygote' {
  const kind = readKind(pid);
  if (kind === undefined) return seen.get(pid) ?? 'other';
  seen.set(pid, kind);
  return kind;
}

/** A Chromium process's kind from its command line; `zygote` is kept apart for its reaped children. */
function readKind(pid: number): ProcKind | 'zygote' | undefined {
  let argv: string[];
  try {
    // Chromium rewrites its command line as one string with spaces (its process title).
    argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split(/[\0 ]/);
  } catch {
    return undefined;
  }
  if (argv[0] === '') return undefined;
  const exe = path.basename(argv[0] ?? '');
  if (/chrom|chrome/.test(exe)) {
    const type = argv.find((a) => a.startsWith('--type='))?.slice('--type='.length);
    if (type === undefined) return 'browser';
    if (type === 'renderer') return 'renderer';
    if (type === 'zygote') return 'zygote';
    return 'gpu_utility';
  }
  if (/^node/.test(exe) || argv.some((a) => /\/node$/.test(a))) return 'node';
  return 'other';
}

/** Where the time of a process's reaped children belongs. */
function reapedKind(parent: ProcKind | 'zygote'): ProcKind {
  if (parent === 'zygote') return 'renderer';
  if (parent === 'browser') return 'gpu_utility';
  return 'ended_chromium';
}

/** An empty split. */
export function zeroCpu(): CpuByKind {
  return { node: 0, browser: 0, renderer: 0, gpu_utility: 0, ended_chromium: 0, other: 0 };
}

/** CPU seconds used so far by `pid` and its descendants, split by kind (see the file comment). */
export function treeCpuByKind(pid: number): CpuByKind {
  const out = zeroCpu();
  for (const p of [pid, ...descendants(pid)]) {
    let f: number[];
    try {
      const stat = readFileSync(`/proc/${p}/stat`, 'utf8');
      // Fields counted from the state field (3 in stat(5)): utime 14, stime 15, cutime 16, cstime 17.
      f = stat.slice(stat.lastIndexOf(')') + 2).split(' ').map(Number);
    } catch {
      continue; // ended meanwhile: its time moves to its parent's reaped count
    }
    const kind = kindOf(p);
    out[kind === 'zygote' ? 'gpu_utility' : kind] += (f[11]! + f[12]!) / CLOCK_TICKS;
    out[reapedKind(kind)] += (f[13]! + f[14]!) / CLOCK_TICKS;
  }
  return out;
}

/** `b - a`, kind by kind. */
export function cpuDelta(a: CpuByKind, b: CpuByKind): CpuByKind {
  const out = zeroCpu();
  for (const k of PROC_KINDS) out[k] = b[k] - a[k];
  return out;
}

/** The sum over kinds. */
export function cpuTotal(c: CpuByKind): number {
  return PROC_KINDS.reduce((sum, k) => sum + c[k], 0);
}
