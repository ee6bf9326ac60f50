/** What each subcommand module exports: its --help text and an entry point (its summary is in index.ts). */
export interface Command {
  /** What `tintype <command> --help` prints: synopsis, options, the settings it reads. */
  help: string;
  /** Runs the role; resolves with an exit code, or never for long-running servers. */
  run(args: string[]): Promise<number | void>;
}

/** Bad command-line input: one line on stderr, exit status 2, nothing on stdout. */
export class CommandLineError extends Error {
  override name = 'CommandLineError';
}

/** The --help text of a command, in the one layout every command uses. */
export function helpText(o: { synopsis: string[]; about: string; options?: Array<[string, string]>; settings: string[] }): string {
  const options: Array<[string, string]> = [...(o.options ?? []), ['-h, --help', 'print this text and exit']];
  const width = Math.max(...options.map(([flag]) => flag.length));
  return [
    ...o.synopsis.map((s, i) => `${i === 0 ? 'usage:' : '      '} ${s}`),
    '',
    ...wrap(o.about, 96),
    '',
    'options:',
    ...options.map(([flag, what]) => `  ${flag.padEnd(width)}  ${what}`),
    '',
    'settings (environment variables; docs/operations.md#settings):',
    ...(o.settings.length === 0 ? ['  none'] : wrap(o.settings.join(', '), 96).map((l) => `  ${l}`)),
    '',
  ].join('\n');
}

function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line === '' ? word : `${line} ${word}`;
  }
  if (line !== '') lines.push(line);
  return lines;
}

/** Whether the arguments ask for help. */
export function wantsHelp(args: readonly string[]): boolean {
  return args.includes('--help') || args.includes('-h');
}

/**
 * Resolves with the first stop signal (SIGTERM from an orchestrator, SIGINT from a terminal).
 * Called first thing in a role's run(): until a listener is on, a signal kills the process.
 */
export function waitForStopSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
  });
}
