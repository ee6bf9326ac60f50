/**
 * A child process's output as the tests that start roles read it: everything it wrote on stdout
 * and stderr, a wait for a line matching a pattern (failing with the output's tail when the
 * process exits first), and its exit.
 */
import type { ChildProcess } from 'node:child_process';

export interface WatchedOutput {
  output(): string;
  exited: Promise<number | null>;
  waitFor(re: RegExp): Promise<void>;
}

/** Watches `child` (spawned with piped stdout and stderr); `label` names it in a failed wait. */
export function watchOutput(child: ChildProcess, label: string): WatchedOutput {
  let out = '';
  const waiters: Array<{ re: RegExp; resolve: () => void }> = [];
  const onData = (c: Buffer): void => {
    out += c.toString('utf8');
    for (const w of waiters.filter((x) => x.re.test(out))) {
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve();
    }
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    output: () => out,
    exited,
    waitFor: (re) => new Promise<void>((resolve, reject) => {
      if (re.test(out)) return resolve();
      waiters.push({ re, resolve });
      void exited.then((code) => reject(new Error(`${label} exited (${code}):\n${out.slice(-3000)}`)));
    }),
  };
}
