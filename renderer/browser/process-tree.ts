/**
 * The browser's processes as Linux shows them in /proc: who descends from the launched
 * process, how much memory they hold together, and how to end all of them.
 */
import { readdirSync, readFileSync } from 'node:fs';

const PAGE_SIZE = 4096;

interface ProcStat {
  pid: number;
  ppid: number;
  state: string;
}

function readStat(pid: number): ProcStat | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name is in parentheses and may hold spaces; fields follow the last ')'.
    const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { pid, state: rest[0] ?? '?', ppid: Number(rest[1]) };
  } catch {
    return undefined;
  }
}

function allStats(): ProcStat[] {
  const out: ProcStat[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const s = readStat(Number(name));
    if (s !== undefined) out.push(s);
  }
  return out;
}

/** `root` and every process descending from it, with their states (`Z` is a zombie). */
export function processTree(root: number): ProcStat[] {
  const stats = allStats();
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
export function treeMemoryBytes(root: number): number {
  let total = 0;
  for (const s of processTree(root)) total += processMemoryBytes(s.pid);
  return total;
}

function processMemoryBytes(pid: number): number {
  try {
    const m = /^Pss:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'));
    if (m !== null) return Number(m[1]) * 1024;
  } catch {
    // no smaps_rollup (old kernel) or the process ended: try statm
  }
  try {
    const fields = readFileSync(`/proc/${pid}/statm`, 'utf8').split(' ');
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
