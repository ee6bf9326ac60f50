/**
 * The browser's processes as Linux shows them in /proc: who descends from the launched
 * process, how much memory they hold together, and how to end all of them.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';

const PAGE_SIZE = 4096;
/** Files of /proc read at once by the asynchronous walk: enough to overlap, few enough to leave the pool's threads to others. */
const PROC_READ_CONCURRENCY = 8;

interface ProcStat {
  pid: number;
  ppid: number;
  state: string;
}

function parseStat(pid: number, text: string): ProcStat {
  // The command name is in parentheses and may hold spaces; fields follow the last ')'.
  const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { pid, state: rest[0] ?? '?', ppid: Number(rest[1]) };
}

function readStat(pid: number): ProcStat | undefined {
  try {
    return parseStat(pid, readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return undefined;
  }
}

async function readStatAsync(pid: number): Promise<ProcStat | undefined> {
  try {
    return parseStat(pid, await readFile(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return undefined;
  }
}

function pidsOf(names: string[]): number[] {
  return names.filter((name) => /^\d+$/.test(name)).map(Number);
}

function allStats(): ProcStat[] {
  const out: ProcStat[] = [];
  for (const pid of pidsOf(readdirSync('/proc'))) {
    const s = readStat(pid);
    if (s !== undefined) out.push(s);
  }
  return out;
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

/** `root` and every process descending from it, with their states (`Z` is a zombie). */
export function processTree(root: number): ProcStat[] {
  return descendants(allStats(), root);
}

/** As `processTree`, reading /proc without blocking the event loop (the pool's periodic memory check). */
export async function processTreeAsync(root: number): Promise<ProcStat[]> {
  const stats = await mapBounded(pidsOf(await readdir('/proc')), PROC_READ_CONCURRENCY, readStatAsync);
  return descendants(
    stats.filter((s): s is ProcStat => s !== undefined),
    root,
  );
}

function descendants(stats: ProcStat[], root: number): ProcStat[] {
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

/** SIGKILLs the process group led by `root` and every descendant found (one may have left the group). */
export function killTree(root: number): void {
  const tree = processTree(root);
  try {
    process.kill(-root, 'SIGKILL');
  } catch {
    // no such group (already gone)
  }
  for (const s of tree) {
    try {
      process.kill(s.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

/** True while `pid` exists and is not a zombie. */
export function isRunning(pid: number): boolean {
  const s = readStat(pid);
  return s !== undefined && s.state !== 'Z';
}
