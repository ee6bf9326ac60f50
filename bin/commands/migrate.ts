/**
 * `tintype migrate [--check] [--timeout-s N] [--wait-s N]`: applies policy's pending schema
 * migrations, once, with the credentials it is given (DATABASE_URL, a role with DDL rights), so
 * policy itself runs with TINTYPE_MIGRATE=wait and needs none (docs/helm.md, "Upgrade"). The chart
 * runs it as a hook Job; without Helm, run it before rolling out a new version. A database not
 * reachable yet (one installed beside the chart, still starting) is tried again for --wait-s.
 * `--check` applies nothing: exit 1 while migrations are pending. Wiring only.
 */
import { parseArgs } from 'node:util';
import { loadConfig } from '../../lib/config.ts';
import { openStore } from '../../policy/store/open.ts';
import { untilReachable } from '../../policy/store/reach.ts';
import { helpText, type Command } from './command.ts';

/** One statement may run this long by default: a migration of a large ledger is not a request. */
const DEFAULT_TIMEOUT_S = 3_600;
/** How long a database that cannot be reached yet is tried again by default, and how often. */
const DEFAULT_WAIT_S = 120;
const RETRY_MS = 2_000;

/** A whole number of seconds from an option, at least `min`; undefined when it is not one. */
function seconds(value: string | undefined, fallback: number, min: number): number | undefined {
  const n = value === undefined ? fallback : Number(value);
  return Number.isInteger(n) && n >= min ? n : undefined;
}

export const migrateCommand: Command = {
  help: helpText({
    synopsis: ['tintype migrate [--check] [--timeout-s N] [--wait-s N]'],
    about: "Applies policy's pending schema migrations (PostgreSQL with DATABASE_URL, else SQLite in TINTYPE_DATA_DIR) " +
      'and prints the versions applied; safe to run again and from several places at once (one runs, the others wait). ' +
      '--check applies nothing and exits 1 while some are pending. Run it before a new version of policy starts: ' +
      'policy with TINTYPE_MIGRATE=wait waits for it (docs/helm.md#upgrade). A database that cannot be reached yet ' +
      '(refused, not resolved, still starting) is tried again every 2 s for --wait-s; any other error fails at once.',
    options: [
      ['--check', 'print the pending versions; exit 0 when none, 1 otherwise'],
      ['--timeout-s N', `how long one migration statement may run (default ${DEFAULT_TIMEOUT_S})`],
      ['--wait-s N', `how long a database that cannot be reached yet is tried again, 0 for not at all (default ${DEFAULT_WAIT_S})`],
    ],
    settings: ['DATABASE_URL', 'TINTYPE_COUNTERS_URL', 'TINTYPE_DATA_DIR', 'TINTYPE_SQLITE_SYNC'],
  }),
  async run(args) {
    const { values } = parseArgs({ args, options: { check: { type: 'boolean' }, 'timeout-s': { type: 'string' }, 'wait-s': { type: 'string' } } });
    const timeoutS = seconds(values['timeout-s'], DEFAULT_TIMEOUT_S, 1);
    const waitS = seconds(values['wait-s'], DEFAULT_WAIT_S, 0);
    if (timeoutS === undefined || waitS === undefined) {
      process.stderr.write('usage: tintype migrate [--check] [--timeout-s N] [--wait-s N] (whole seconds; --timeout-s at least 1)\n');
      return 2;
    }
    const config = loadConfig();
    const store = openStore(config, { shortLived: true });
    try {
      // The first call connects: a database still starting is asked again until --wait-s has passed.
      const pending = await untilReachable(() => store.pendingMigrations(), {
        deadline: Date.now() + waitS * 1000,
        intervalMs: RETRY_MS,
        onWait: (why) => process.stderr.write(`tintype migrate: the database cannot be reached yet (${why}); trying again\n`),
      });
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
