/**
 * `tintype egress --key ID [--since T] [--until T] [--decision D] [--format table|csv|json]`
 * (docs/operations.md "Egress policy and audit"): a key's egress audit trail, oldest first. Bad input is
 * one line on stderr and exit status 2. Wiring only: the work is in policy/egress-report.ts.
 */
import { parseArgs } from 'node:util';
import { loadConfig } from '../../lib/config.ts';
import { EGRESS_FORMATS, EgressInputError, type EgressFormat, MAX_READ, formatAudit, parseAuditQuery } from '../../policy/egress-report.ts';
import { openStore } from '../../policy/store/open.ts';
import { CommandLineError, helpText, type Command } from './command.ts';

export const egressCommand: Command = {
  help: helpText({
    synopsis: ['tintype egress --key ID [--since T] [--until T] [--decision D] [--format table|csv|json]'],
    about: 'The guard\'s decisions on the fetches of one key\'s renders, oldest first: time, key, render, operation, host, port, ' +
      `decision, reason, mode; never a path or query. At most ${MAX_READ} records per read: narrow the window for more. ` +
      'Kept TINTYPE_EGRESS_AUDIT_DAYS days. Works while policy runs. Bad input exits with status 2.',
    options: [
      ['--key ID', 'the key (required)'],
      ['--since T', 'from this time on (YYYY-MM-DD, UTC, or an ISO 8601 time with its zone)'],
      ['--until T', 'before this time'],
      ['--decision D', 'allowed, refused or would_refuse'],
      ['--format F', 'table (default), csv (RFC 4180, a header row) or json'],
    ],
    settings: ['DATABASE_URL', 'TINTYPE_COUNTERS_URL', 'TINTYPE_DATA_DIR'],
  }),
  async run(args) {
    const { values } = parseArgs({
      args,
      options: { key: { type: 'string' }, since: { type: 'string' }, until: { type: 'string' }, decision: { type: 'string' }, format: { type: 'string' } },
      allowPositionals: false,
    });
    let query;
    try {
      query = parseAuditQuery(values);
    } catch (err) {
      throw err instanceof EgressInputError ? new CommandLineError(`--${err.message}`) : err;
    }
    const format = values.format ?? 'table';
    if (!(EGRESS_FORMATS as readonly string[]).includes(format)) throw new CommandLineError(`--format must be one of ${EGRESS_FORMATS.join(', ')}`);
    const store = openStore(loadConfig(), { shortLived: true });
    try {
      const pending = await store.pendingMigrations();
      if (pending.length > 0) {
        process.stderr.write(`the schema is not migrated yet (pending ${pending.join(', ')}): run tintype migrate first\n`);
        return 1;
      }
      process.stdout.write(formatAudit(await store.egress.readAudit(query), format as EgressFormat));
      return 0;
    } finally {
      await store.close();
    }
  },
};
