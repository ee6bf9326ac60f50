/** A ledger sink alone in a process, for the test that kills it (kill -9): options as JSON in LEDGER_SINK. */
import { createLogger } from '../../../lib/log.ts';
import { startLedgerSink } from '../../../policy/ledger/index.ts';

const o = JSON.parse(process.env['LEDGER_SINK'] ?? '{}') as { redisUrl: string; databaseUrl: string; stream: string; consumer: string; batchSize: number };
startLedgerSink({ ...o, logger: createLogger('sink', { level: 'error' }) });
process.stdout.write('started\n');
