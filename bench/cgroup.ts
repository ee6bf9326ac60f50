/**
 * A memory cgroup of its own for a process tree under measurement, to read its memory the way a
 * container's limit counts it: every page once, shared or not. The working set is what a
 * kubelet compares with the limit: usage less the file cache the kernel can drop at once
 * (inactive file pages). Needs root and a writable memory hierarchy (cgroup v1's memory
 * controller, or v2 with memory delegated); elsewhere there is none and the bench says so.
 */
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export interface MemoryCgroup {
  /** Moves a process into the group; the children it starts afterwards are in it too. */
  add(pid: number): void;
  /** Usage less inactive file pages, in bytes. */
  workingSetBytes(): number;
  /** The most the group ever used, in bytes, where the kernel keeps it. */
  peakBytes(): number | undefined;
  /** Removes the group once its processes are gone. */
  remove(): void;
}

interface Layout {
  usage: string;
  peak: string;
  inactiveFile: string;
}

const V1: Layout = { usage: 'memory.usage_in_bytes', peak: 'memory.max_usage_in_bytes', inactiveFile: 'total_inactive_file' };
const V2: Layout = { usage: 'memory.current', peak: 'memory.peak', inactiveFile: 'inactive_file' };

/** This process's memory cgroup directory and its layout, from /proc/self/cgroup. */
function ownMemoryCgroup(): { dir: string; layout: Layout } | undefined {
  // Each line is `id:controllers:path`.
  const entries = readFileSync('/proc/self/cgroup', 'utf8').trim().split('\n').map((l) => l.split(':'));
  const v1 = entries.find(([, controllers]) => controllers?.split(',').includes('memory'));
  if (v1 !== undefined) return { dir: path.join('/sys/fs/cgroup/memory', v1[2] ?? '/'), layout: V1 };
  const v2 = entries.find(([id, controllers]) => id === '0' && controllers === '');
  if (v2 !== undefined) return { dir: path.join('/sys/fs/cgroup', v2[2] ?? '/'), layout: V2 };
  return undefined;
}

function readNumber(file: string): number {
  return Number(readFileSync(file, 'utf8').trim());
}

/** A new memory cgroup below this process's own, or undefined where none can be made. */
export function createMemoryCgroup(name: string): MemoryCgroup | undefined {
  let dir: string;
  let layout: Layout;
  try {
    const own = ownMemoryCgroup();
    if (own === undefined) return undefined;
    layout = own.layout;
    dir = path.join(own.dir, `${name}-${process.pid}`);
    mkdirSync(dir, { recursive: true });
    if (!existsSync(path.join(dir, layout.usage))) {
      rmdirSync(dir);
      return undefined; // v2 without the memory controller delegated here
    }
  } catch {
    return undefined;
  }
  return {
    add(pid) {
      writeFileSync(path.join(dir, 'cgroup.procs'), String(pid));
    },
    workingSetBytes() {
      const stat = readFileSync(path.join(dir, 'memory.stat'), 'utf8');
      const inactive = Number(new RegExp(`^${layout.inactiveFile} (\\d+)$`, 'm').exec(stat)?.[1] ?? 0);
      return readNumber(path.join(dir, layout.usage)) - inactive;
    },
    peakBytes() {
      const file = path.join(dir, layout.peak);
      return existsSync(file) ? readNumber(file) : undefined;
    },
    remove() {
      try {
        rmdirSync(dir);
      } catch {
        // still has a process in it; the kernel keeps an empty group until it is removed
      }
    },
  };
}
