/**
 * Every command answers --help: its synopsis, its options and the settings it reads, on stdout,
 * exit status 0, without starting anything (README "Commands").
 */
import t from 'tap';
import { commands } from '../../bin/commands/index.ts';
import { runTintype } from '../policy/process.ts';

t.test('each command has a help text with synopsis, options and settings', async (t) => {
  const help = async (name: string): Promise<string> => (await commands[name]!.load()).help;
  for (const name of Object.keys(commands)) {
    const text = await help(name);
    t.match(text, new RegExp(`^usage: tintype ${name}\\b`), `${name}: synopsis first`);
    t.match(text, /\noptions:\n {2}/, `${name}: options`);
    t.match(text, /-h, --help/, `${name}: -h and --help`);
    t.match(text, /\nsettings \(environment variables; docs\/operations\.md#settings\):\n {2}\S/, `${name}: the settings it reads`);
  }
  t.match(await help('usage'), /--month YYYY-MM[\s\S]*--key ID[\s\S]*--format F[\s\S]*DATABASE_URL, TINTYPE_COUNTERS_URL, TINTYPE_DATA_DIR, TINTYPE_PLANS/);
  t.match(await help('policy'), /TINTYPE_ADMIN_PORT/);
});

t.test('the program prints it and exits 0, for a command and for a keys action', async (t) => {
  for (const args of [['keys', 'create', '--help'], ['usage', '-h'], ['policy', '--help']]) {
    const r = await runTintype(args, {});
    t.equal(r.code, 0, args.join(' '));
    t.equal(r.stdout, (await commands[args[0]!]!.load()).help, `${args.join(' ')}: the help text on stdout`);
    t.equal(r.stderr, '', `${args.join(' ')}: nothing on stderr`);
  }
});
