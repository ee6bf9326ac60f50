/**
 * Ledger upkeep in each policy replica on PostgreSQL (docs/operations.md "Ledger retention"): at
 * start and every hour, the partitions of the current and next months are made, and with
 * TINTYPE_LEDGER_MONTHS set the months before the kept ones are dropped whole (a partition drop;
 * the tallies stay). Replicas doing it at once take turns on one advisory lock and find it done.
 * Both take the ledger's table lock for an instant: a short lock_timeout keeps a busy ledger from
 * queueing behind them, and a round that gives up is tried again at the next.
 */
import pg from 'pg';
import type { Logger } from '../../lib/log.ts';
import { dropLedgerMonths, prepareLedgerMonths } from './partitions.ts';

export interface LedgerUpkeepOptions {
  databaseUrl: string;
  logger: Logger;
  /** Months of raw records kept, the current one included; undefined keeps every month. */
  keepMonths: number | undefined;
  everyMs?: number;
  clock?: () => number;
}

const EVERY_MS = 60 * 60 * 1000;
const LOCK_TIMEOUT_MS = 2_000;

/** One round: months ahead made, old months dropped. Returns the months dropped. */
export async function ledgerUpkeep(o: Omit<LedgerUpkeepOptions, 'everyMs' | 'logger'>): Promise<string[]> {
  const c = new pg.Client({ connectionString: o.databaseUrl, connectionTimeoutMillis: 5_000 });
  c.on('error', () => {});
  await c.connect();
  try {
    await c.query(`SET lock_timeout = ${LOCK_TIMEOUT_MS}`);
    const now = (o.clock ?? Date.now)();
    await prepareLedgerMonths(c, now);
    return o.keepMonths === undefined ? [] : await dropLedgerMonths(c, now, o.keepMonths);
  } finally {
    await c.end().catch(() => {});
  }
}

export function startLedgerUpkeep(o: LedgerUpkeepOptions): { stop(): void } {
  const run = () => {
    ledgerUpkeep(o).then(
      (dropped) => { if (dropped.length > 0) o.logger.info('ledger.months_dropped', { months: dropped.join(',') }); },
      (err: Error) => o.logger.warn('ledger.upkeep_failed', { error: err.message }),
    );
  };
  run();
  const timer = setInterval(run, o.everyMs ?? EVERY_MS);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
