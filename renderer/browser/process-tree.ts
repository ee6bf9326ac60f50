/**
 * The browser's processes as Linux shows them in /proc: who descends from the launched
 * process, how much memory they hold together (launcher/proc.ts), and how to end all of them.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { descendants, parseStat, pidsOf, type ProcStat } from './launcher/proc.ts';

export { processTreeAsync, treeMemoryBytes } from './launcher/proc.ts';

function readStat(pid: number): ProcStat | undefined {
  try {
    return parseStat(pid, readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return undefined;
  }
}

function allStats(): ProcStat[] {
  const out: ProcStat[] = [];
  for (const pid of pidsOf(readdirSync('/proc'))) {
    const s = readStat(pid);
    if (s !== undefined) out.push(s);
  }
  return out;
}

/** `root` and every process descending from it, with their states (`Z` is a zombie). */
export function processTree(root: number): ProcStat[] {
  return descendants(allStats(), root);
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
