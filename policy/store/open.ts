/** Picks the backend from the settings: PostgreSQL when DATABASE_URL is set, else SQLite in the data dir (docs/operations.md "Settings"). */
import type { Config } from '../../lib/config.ts';
import { openPostgresStore } from './postgres.ts';
import { openSqliteStore } from './sqlite.ts';
import type { PolicyStore } from './store.ts';

export function openStore(config: Readonly<Config>, options: { shortLived?: boolean } = {}): PolicyStore {
  if (config.databaseUrl !== undefined) return openPostgresStore({ url: config.databaseUrl, poolSize: config.pgPoolSize });
  // A short-lived admin command writes a row or two: no checkpoint thread for it.
  return openSqliteStore({ dataDir: config.dataDir, synchronous: config.sqliteSync, backgroundCheckpoints: !options.shortLived });
}
