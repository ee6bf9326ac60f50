/** The `tintype` command: one subcommand per role (docs/architecture.md §1). Wiring only. */
import { commands } from './commands/index.ts';

const [name, ...args] = process.argv.slice(2);

function usage(): string {
  const lines = Object.entries(commands).map(([cmd, c]) => `  tintype ${cmd.padEnd(11)} ${c.summary}`);
  return ['usage: tintype <command> [options]', '', ...lines].join('\n');
}

const command = name === undefined ? undefined : commands[name];
if (command === undefined) {
  process.stderr.write(`${name === undefined || name === '--help' || name === 'help' ? '' : `unknown command: ${name}\n\n`}${usage()}\n`);
  process.exit(name === '--help' || name === 'help' ? 0 : 2);
}

try {
  const code = await command.run(args);
  if (typeof code === 'number') process.exitCode = code;
} catch (err) {
  process.stderr.write(`tintype ${name}: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
}
