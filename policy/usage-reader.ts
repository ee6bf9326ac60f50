/**
 * Where the usage report reads from: the same store policy writes (DATABASE_URL, with the
 * counters in TINTYPE_COUNTERS_URL when set, else SQLite in TINTYPE_DATA_DIR), always read-only
 * and on a connection of the report's own.
 */
import type { Config } from '../lib/config.ts';
import type { Plans } from './plans.ts';
import { postgresUsageReader } from './usage-postgres.ts';
import { countersUsageReader } from './usage-counters.ts';
import { type ReportKeys, type UsageReport, type UsageSnapshot, UsageInputError, buildReport } from './usage-report.ts';
import { sqliteUsageReader } from './usage-sqlite.ts';

export interface UsageReader {
  /** One month (and one key, when given) in one read transaction; throws when the store cannot answer. */
  read(month: string, keyId?: string): Promise<UsageSnapshot>;
  close(): Promise<void>;
}

export function openUsageReader(config: Pick<Config, 'databaseUrl' | 'dataDir' | 'countersUrl'>): UsageReader {
  if (config.databaseUrl !== undefined && config.countersUrl !== undefined) return countersUsageReader(config.databaseUrl, config.countersUrl);
  return config.databaseUrl !== undefined ? postgresUsageReader(config.databaseUrl) : sqliteUsageReader(config.dataDir);
}

/** Reads and folds one month; an unknown key id is a UsageInputError (`unknown_key`). */
export async function readUsage(reader: UsageReader, plans: Plans, month: string, which: ReportKeys = {}): Promise<UsageReport> {
  const keyId = which.keyId;
  const snapshot = await reader.read(month, keyId);
  if (keyId !== undefined && !snapshot.keys.some((k) => k.id === keyId)) {
    throw new UsageInputError(`unknown key id "${keyId}" (see tintype keys list)`, 'unknown_key');
  }
  return buildReport(month, snapshot, plans, which);
}
