/**
 * State under TINTYPE_DATA_DIR is readable by the service's user alone (docs/operations.md, "Files and
 * modes"): the key database holds key hashes and usage, the file cache other callers' renders.
 * Directories are 0700 and files 0600 whatever the process umask is; a directory or file left
 * by an older version with wider modes is narrowed when the process owns it.
 */
import { chmodSync, closeSync, mkdirSync, openSync } from 'node:fs';

export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

/** Narrows `target` to `mode`; one this process may not change (not its owner) is left as it is. */
function narrow(target: string, mode: number): void {
  try {
    chmodSync(target, mode);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'EPERM' && code !== 'ENOENT') throw err;
  }
}

/** Creates `dir` (and missing parents) as 0700, or narrows an existing one to 0700. */
export function ensurePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  narrow(dir, PRIVATE_DIR_MODE);
}

/** Creates `file` empty as 0600 if it does not exist, else narrows it to 0600. Never truncates. */
export function ensurePrivateFile(file: string): void {
  closeSync(openSync(file, 'a', PRIVATE_FILE_MODE));
  narrow(file, PRIVATE_FILE_MODE);
}

/** Narrows `file` to 0600 if it exists (a companion file another library creates). */
export function narrowIfPresent(file: string): void {
  narrow(file, PRIVATE_FILE_MODE);
}
