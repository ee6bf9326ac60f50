/**
 * The browser's processes as Linux shows them in /proc: who descends from the launched
 * process, how much resident memory they hold together, and how to end all of them.
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

/** Resident memory of `root` and its descendants, in bytes (shared pages counted per process: an upper bound). */
export function treeRssBytes(root: number): number {
  let total = 0;
  for (const s of processTree(root)) {
    try {
      const fields = readFileSync(`/proc/${s.pid}/statm`, 'utf8').split(' ');
      total += Number(fields[1] ?? 0) * PAGE_SIZE;
    } catch {
      // the process ended while we looked
    }
  }
  return total;
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
