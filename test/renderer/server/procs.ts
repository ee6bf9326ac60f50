/** The process tree under a pid, read from /proc (the renderer's tests and bench/render). */
import { readFileSync, readdirSync } from 'node:fs';

/** Every live descendant of `pid` (not `pid` itself), parents before children. */
export function descendants(pid: number): number[] {
  const parent = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      parent.set(Number(name), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // gone meanwhile
    }
  }
  const out: number[] = [];
  for (let queue = [pid]; queue.length > 0; ) {
    const p = queue.shift()!;
    for (const [child, pp] of parent) if (pp === p) (out.push(child), queue.push(child));
  }
  return out;
}

/** Whether `pid` runs (exists and is not a zombie). */
export function alive(pid: number): boolean {
  try {
    return !/\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}
