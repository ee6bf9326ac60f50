#!/usr/bin/env node
/** The `tintype` command: one subcommand per role (docs/architecture.md §1). Wiring only. */
import { CommandLineError, wantsHelp } from './commands/command.ts';
import { commands } from './commands/index.ts';

const [name, ...args] = process.argv.slice(2);

function usage(): string {
  const lines = Object.entries(commands).map(([cmd, c]) => `  tintype ${cmd.padEnd(11)} ${c.summary}`);
  return ['usage: tintype <command> [options]', '', ...lines, '', 'tintype <command> --help: its synopsis, options and the settings it reads'].join('\n');
}

const entry = name === undefined ? undefined : commands[name];
if (entry === undefined) {
  process.stderr.write(`${name === undefined || name === '--help' || name === '-h' || name === 'help' ? '' : `unknown command: ${name}\n\n`}${usage()}\n`);
  process.exit(name === '--help' || name === '-h' || name === 'help' ? 0 : 2);
}

const command = await entry.load();
if (wantsHelp(args)) {
  process.stdout.write(command.help);
  process.exit(0);
}

try {
  const code = await command.run(args);
  if (typeof code === 'number') process.exitCode = code;
} catch (err) {
  if (err instanceof CommandLineError || (err as { code?: unknown }).code?.toString().startsWith('ERR_PARSE_ARGS')) {
    process.stderr.write(`tintype ${name}: ${(err as Error).message.split('\n', 1)[0]}\n`);
    process.exit(2);
  }
  process.stderr.write(`tintype ${name}: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
}
