/**
 * `tintype migrate [--check] [--timeout-s N]`: applies policy's pending schema migrations, once,
 * with the credentials it is given (DATABASE_URL, a role with DDL rights), so policy itself runs
 * with TINTYPE_MIGRATE=wait and needs none (docs/helm.md, "Upgrade"). The chart runs it as a
 * pre-install/pre-upgrade hook Job; without Helm, run it before rolling out a new version.
 * `--check` applies nothing: exit 1 while migrations are pending. Wiring only.
 */
import { parseArgs } from 'node:util';
import { loadConfig } from '../../lib/config.ts';
import { openStore } from '../../policy/store/open.ts';
import { helpText, type Command } from './command.ts';

/** One statement may run this long by default: a migration of a large ledger is not a request. */
const DEFAULT_TIMEOUT_S = 3_600;

export const migrateCommand: Command = {
  help: helpText({
    synopsis: ['tintype migrate [--check] [--timeout-s N]'],
    about: "Applies policy's pending schema migrations (PostgreSQL with DATABASE_URL, else SQLite in TINTYPE_DATA_DIR) " +
      'and prints the versions applied; safe to run again and from several places at once (one runs, the others wait). ' +
      '--check applies nothing and exits 1 while some are pending. Run it before a new version of policy starts: ' +
      'policy with TINTYPE_MIGRATE=wait waits for it (docs/helm.md#upgrade).',
    options: [
      ['--check', 'print the pending versions; exit 0 when none, 1 otherwise'],
      ['--timeout-s N', `how long one migration statement may run (default ${DEFAULT_TIMEOUT_S})`],
    ],
    settings: ['DATABASE_URL', 'TINTYPE_DATA_DIR', 'TINTYPE_SQLITE_SYNC'],
  }),
  async run(args) {
    const { values } = parseArgs({ args, options: { check: { type: 'boolean' }, 'timeout-s': { type: 'string' } } });
    const timeoutS = values['timeout-s'] === undefined ? DEFAULT_TIMEOUT_S : Number(values['timeout-s']);
    if (!Number.isInteger(timeoutS) || timeoutS < 1) {
      process.stderr.write('usage: tintype migrate [--check] [--timeout-s N] (N: whole seconds, at least 1)\n');
      return 2;
    }
    const config = loadConfig();
    const store = openStore(config, { shortLived: true });
    try {
      const pending = await store.pendingMigrations();
      if (values.check === true) {
        process.stdout.write(pending.length === 0 ? 'schema: up to date\n' : `schema: pending ${pending.join(', ')}\n`);
        return pending.length === 0 ? 0 : 1;
      }
      await store.migrate({ timeoutMs: timeoutS * 1000 });
      const left = await store.pendingMigrations();
      if (left.length > 0) throw new Error(`still pending after migrating: ${left.join(', ')}`);
      process.stdout.write(pending.length === 0 ? 'schema: up to date, nothing applied\n' : `schema: applied ${pending.join(', ')}\n`);
      return 0;
    } finally {
      await store.close();
    }
  },
};
