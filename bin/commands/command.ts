/** What each subcommand module exports: a one-line summary and an entry point. */
export interface Command {
  summary: string;
  /** Runs the role; resolves with an exit code, or never for long-running servers. */
  run(args: string[]): Promise<number | void>;
}

/** A subcommand whose role is not built yet: says so and exits non-zero. */
export function notBuilt(summary: string): Command {
  return {
    summary: `${summary} (not built yet)`,
    async run() {
      process.stderr.write(`tintype: this command is not built yet: ${summary}\n`);
      return 3;
    },
  };
}

/** Resolves with the first stop signal (SIGTERM from an orchestrator, SIGINT from a terminal). */
export function waitForStopSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
  });
}
