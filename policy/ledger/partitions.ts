/**
 * The ledger's month partitions (docs/operations.md "Ledger retention"): made ahead of the months
 * to come, made on demand by whoever writes a month that has none (tintype_ledger_insert), and
 * dropped whole past the months kept. The SQL functions are migration 8's (policy/store/ledger-schema.ts).
 */
import { addMonths, monthOf } from '../calendar.ts';

/** What runs a statement: a pg Pool or Client. */
export interface Queryable {
  query(text: string, values?: unknown[]): Promise<{ rows: Array<Record<string, unknown>> }>;
}

/** Months made ahead of the current one, so no settle at a month's turn waits on making one. */
export const LEDGER_MONTHS_AHEAD = 2;

/** The current month and LEDGER_MONTHS_AHEAD after it, oldest first. */
export function upcomingMonths(now: number): string[] {
  const month = monthOf(now);
  return Array.from({ length: LEDGER_MONTHS_AHEAD + 1 }, (_, i) => addMonths(month, i));
}

/** Makes the partitions of the current month and the next ones that are missing. */
export async function prepareLedgerMonths(db: Queryable, now: number): Promise<void> {
  await db.query('SELECT tintype_ledger_partition(m) FROM unnest($1::text[]) m', [upcomingMonths(now)]);
}

/** The first month kept when `keep` months are kept, the current one included. */
export function firstKeptMonth(now: number, keep: number): string {
  return addMonths(monthOf(now), -(keep - 1));
}

/** Drops the partitions of the months before the `keep` last ones; returns the months dropped. */
export async function dropLedgerMonths(db: Queryable, now: number, keep: number): Promise<string[]> {
  const r = await db.query('SELECT tintype_ledger_drop_before($1) AS dropped', [firstKeptMonth(now, keep)]);
  return (r.rows[0]?.['dropped'] as string[] | undefined) ?? [];
}

/** The months that have a partition, oldest first. */
export async function ledgerMonths(db: Queryable): Promise<string[]> {
  const r = await db.query(`SELECT replace(substr(c.relname, 7), '_', '-') AS month FROM pg_inherits i
    JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = to_regclass('usage') ORDER BY 1`);
  return r.rows.map((row) => String(row['month']));
}
