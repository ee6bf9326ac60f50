/**
 * A process tree as Linux shows it in /proc: who descends from a process and how much memory
 * they hold together. The launcher reports Chromium's memory from it (the renderer cannot see
 * Chromium's /proc from another container); the renderer's process-tree.ts walks it as well.
 */
import { readdir, readFile } from 'node:fs/promises';

const PAGE_SIZE = 4096;
/** Files of /proc read at once by the asynchronous walk: enough to overlap, few enough to leave the pool's threads to others. */
const PROC_READ_CONCURRENCY = 8;

/** One process as its /proc/<pid>/stat describes it. */
export interface ProcStat {
  pid: number;
  ppid: number;
  state: string;
}

export function parseStat(pid: number, text: string): ProcStat {
  // The command name is in parentheses and may hold spaces; fields follow the last ')'.
  const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { pid, state: rest[0] ?? '?', ppid: Number(rest[1]) };
}

async function readStatAsync(pid: number): Promise<ProcStat | undefined> {
  try {
    return parseStat(pid, await readFile(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return undefined;
  }
}

/** The numeric names of a /proc listing. */
export function pidsOf(names: string[]): number[] {
  return names.filter((name) => /^\d+$/.test(name)).map(Number);
}

/** Runs `fn` over `items` with at most `limit` calls in flight; results keep the items' order. */
async function mapBounded<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/** `root` and every process descending from it, reading /proc without blocking the event loop. */
export async function processTreeAsync(root: number): Promise<ProcStat[]> {
  const stats = await mapBounded(pidsOf(await readdir('/proc')), PROC_READ_CONCURRENCY, readStatAsync);
  return descendants(
    stats.filter((s): s is ProcStat => s !== undefined),
    root,
  );
}

/** `root` and its descendants among `stats`, root first. */
export function descendants(stats: ProcStat[], root: number): ProcStat[] {
  const children = new Map<number, ProcStat[]>();
  for (const s of stats) {
    const list = children.get(s.ppid) ?? [];
    list.push(s);
    children.set(s.ppid, list);
  }
  const rootStat = stats.find((s) => s.pid === root);
  if (rootStat === undefined) return [];
  const out: ProcStat[] = [];
  const queue = [rootStat];
  while (queue.length > 0) {
    const s = queue.shift()!;
    out.push(s);
    queue.push(...(children.get(s.pid) ?? []));
  }
  return out;
}

/**
 * Memory of `root` and its descendants, in bytes: the sum of their proportional set sizes
 * (shared pages split between the processes sharing them), so Chromium's many processes are
 * not each charged the whole of its shared code. Falls back to resident size where the kernel
 * offers no smaps_rollup.
 */
export async function treeMemoryBytes(root: number): Promise<number> {
  // Asynchronous and bounded: reading every /proc/*/stat and each smaps_rollup synchronously
  // blocked the event loop for tens of ms per check under load, delaying every request.
  const sizes = await mapBounded(await processTreeAsync(root), PROC_READ_CONCURRENCY, (s) => processMemoryBytes(s.pid));
  return sizes.reduce((a, b) => a + b, 0);
}

async function processMemoryBytes(pid: number): Promise<number> {
  try {
    const m = /^Pss:\s+(\d+) kB$/m.exec(await readFile(`/proc/${pid}/smaps_rollup`, 'utf8'));
    if (m !== null) return Number(m[1]) * 1024;
  } catch {
    // no smaps_rollup (old kernel) or the process ended: try statm
  }
  try {
    const fields = (await readFile(`/proc/${pid}/statm`, 'utf8')).split(' ');
    return Number(fields[1] ?? 0) * PAGE_SIZE;
  } catch {
    return 0; // the process ended while we looked
  }
}
