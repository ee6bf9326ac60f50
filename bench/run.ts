/**
 * `npm run bench -- <name>` runs bench/<name>.ts (docs/performance.md "Running the benchmarks"). Each benchmark prints readable
 * lines, the machine and versions first (see machine.ts), and one JSON object as its last line.
 */
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
/** Modules the benchmarks share; not benchmarks themselves. */
const HELPERS = ['run.ts', 'machine.ts', 'cgroup.ts', 'proc-cpu.ts', 'peer.ts', 'service.ts', 'render-defaults.ts'];
const name = process.argv[2];
const available = readdirSync(here)
  .filter((f) => f.endsWith('.ts') && !HELPERS.includes(f))
  .map((f) => f.slice(0, -3));

if (name === undefined || !/^[a-z0-9-]+$/.test(name) || !existsSync(path.join(here, `${name}.ts`))) {
  process.stderr.write(`usage: npm run bench -- <name>\navailable: ${available.join(', ') || '(none yet)'}\n`);
  process.exit(2);
}
await import(pathToFileURL(path.join(here, `${name}.ts`)).href);
