/**
 * `tintype usage [--month YYYY-MM] [--key ID] [--format table|csv|json]` (docs/operations.md "Reading
 * usage"): the ledger per key for one UTC month, read-only, on a running service or not. Bad
 * input is one line on stderr and exit status 2, with nothing on stdout; the report is written
 * only once it is whole. Wiring only: the work is in policy/usage-*.ts.
 */
import { parseArgs } from 'node:util';
import { loadConfig } from '../../lib/config.ts';
import { monthOf } from '../../policy/calendar.ts';
import { loadPlans } from '../../policy/plans.ts';
import { FORMATS, type UsageFormat, formatReport } from '../../policy/usage-format.ts';
import { openUsageReader, readUsage } from '../../policy/usage-reader.ts';
import { UsageInputError, parseKeyId, parseMonth } from '../../policy/usage-report.ts';
import { CommandLineError, helpText, type Command } from './command.ts';

export const usageCommand: Command = {
  help: helpText({
    synopsis: ['tintype usage [--month YYYY-MM] [--key ID] [--format table|csv|json]'],
    about: 'Per key, for one UTC month: metered calls, calls by operation, cache hits and renders, answers by status and error ' +
      'code, unsettled (expired) leases, the plan\'s quota and what is left. Read-only: it takes no write lock and works while ' +
      'policy runs. CSV columns are listed in docs/operations.md#reading-usage. Bad input exits with status 2.',
    options: [
      ['--month YYYY-MM', 'the UTC month (default: this one)'],
      ['--key ID', 'one key only (default: every key of the month)'],
      ['--format F', 'table (default), csv (RFC 4180, UTF-8, a header row) or json'],
    ],
    settings: ['DATABASE_URL', 'TINTYPE_COUNTERS_URL', 'TINTYPE_DATA_DIR', 'TINTYPE_PLANS'],
  }),
  async run(args) {
    const { values } = parseArgs({
      args,
      options: { month: { type: 'string' }, key: { type: 'string' }, format: { type: 'string' } },
      allowPositionals: false,
    });
    let month: string;
    let keyId: string | undefined;
    try {
      month = parseMonth(values.month ?? monthOf(Date.now()));
      keyId = values.key === undefined ? undefined : parseKeyId(values.key);
    } catch (err) {
      throw err instanceof UsageInputError ? new CommandLineError(err.message) : err;
    }
    const format = values.format ?? 'table';
    if (!(FORMATS as readonly string[]).includes(format)) {
      throw new CommandLineError(`--format must be one of ${FORMATS.join(', ')} (got "${format.slice(0, 40)}")`);
    }
    const config = loadConfig();
    const plans = loadPlans(config.plansFile);
    const reader = openUsageReader(config);
    try {
      const report = await readUsage(reader, plans, month, keyId === undefined ? {} : { keyId });
      process.stdout.write(formatReport(report, format as UsageFormat));
      return 0;
    } catch (err) {
      throw err instanceof UsageInputError ? new CommandLineError(err.message) : err;
    } finally {
      await reader.close();
    }
  },
};
