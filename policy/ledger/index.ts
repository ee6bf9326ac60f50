/** The ledger's way from the Redis stream to PostgreSQL's month partitions (docs/operations.md "Ledger stream", "Ledger retention"). */
export { LEDGER_FIELD, LEDGER_STREAM, ledgerEvent, parseLedgerEvent } from './event.ts';
export { LEDGER_GROUP, startLedgerSink, type LedgerCommit, type LedgerSink, type LedgerSinkOptions } from './sink.ts';
export { ledgerUpkeep, startLedgerUpkeep } from './retention.ts';
export { writeLedgerBatch } from './write.ts';
