/** Which Chromium binary, and which headless switch it takes. */
import { existsSync, realpathSync } from 'node:fs';

/** Candidates in order of preference; the headless shell is much faster for this work. */
export const CHROMIUM_CANDIDATES = [
  // The Debian wrapper in /usr/bin is a shell script that forks instead of exec'ing; the binary
  // behind it keeps the process tree flat (one process group, one pid to supervise).
  '/usr/lib/chromium/chromium-headless-shell',
  '/usr/bin/chromium-headless-shell',
  '/usr/lib/chromium/chromium',
  '/usr/bin/chromium',
];

/** The Chromium binary: `configured` when set, else the first installed candidate. */
export function findChromium(configured: string | undefined, exists: (p: string) => boolean = existsSync): string {
  if (configured !== undefined) return configured;
  const found = CHROMIUM_CANDIDATES.find((p) => exists(p));
  if (found === undefined) throw new Error(`no Chromium found (${CHROMIUM_CANDIDATES.join(', ')}); set CHROMIUM_PATH`);
  return found;
}

/** True for the headless shell, which takes the old `--headless` switch rather than `--headless=new`. */
export function isHeadlessShell(executable: string): boolean {
  let real = executable;
  try {
    real = realpathSync(executable);
  } catch {
    // a path that does not resolve is judged by its name
  }
  return /headless[-_]shell/.test(real);
}
