/**
 * `bin/tintype <command>` as a process, for the tests of a command, through env(1): tap's loader
 * in NODE_OPTIONS cannot load the extensionless launcher, and env execs, so signals reach tintype
 * itself. Only the settings given are set; its log lines on stderr are collected as they come.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const TINTYPE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'bin', 'tintype');

export interface TintypeProcess {
  child: ChildProcess;
  /** The log lines so far, parsed; a line that is not JSON as `{ text }`. */
  lines: any[];
  exited: Promise<number | null>;
}

/** Starts `tintype <command>`; `onLine` sees each log line as it is collected. */
export function spawnTintype(command: string, env: Record<string, string>, onLine: (line: any) => void = () => {}): TintypeProcess {
  const child = spawn('/usr/bin/env', ['-u', 'NODE_OPTIONS', TINTYPE, command], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const lines: any[] = [];
  let buffer = '';
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (chunk: string) => {
    buffer += chunk;
    let nl: number;
    while ((nl = buffer.indexOf('\n')) !== -1) {
      const text = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      let line: unknown;
      try {
        line = JSON.parse(text);
      } catch {
        line = { text };
      }
      lines.push(line);
      onLine(line);
    }
  });
  return { child, lines, exited: new Promise((resolve) => child.on('exit', (code) => resolve(code))) };
}
