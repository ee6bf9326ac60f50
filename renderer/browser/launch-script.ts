/** Helpers for the shell scripts the netns launch is made of: finding the tools they run, quoting. */
import { existsSync } from 'node:fs';
import path from 'node:path';

/** The first of `candidates` that exists; throws naming the tool when none does. */
export function findTool(candidates: readonly string[]): string {
  const found = candidates.find((p) => existsSync(p));
  if (found === undefined) throw new Error(`netns isolation needs ${path.basename(candidates[0]!)} (${candidates.join(' or ')})`);
  return found;
}

/** Quotes a string for /bin/sh. */
export function sh(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}
