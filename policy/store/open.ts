/**
 * Picks the backend from the settings (docs/operations.md "Settings"): Redis counters beside
 * PostgreSQL when DATABASE_URL and TINTYPE_COUNTERS_URL are set, PostgreSQL when DATABASE_URL
 * alone is, else SQLite in the data dir.
 */
import type { Config } from '../../lib/config.ts';
import type { Logger } from '../../lib/log.ts';
import { openPostgresStore } from './postgres.ts';
import { openSqliteStore } from './sqlite.ts';
import { openRedisStore } from './redis/store.ts';
import type { PolicyStore } from './store.ts';

export function openStore(config: Readonly<Config>, options: { shortLived?: boolean; logger?: Logger } = {}): PolicyStore {
  if (config.databaseUrl !== undefined && config.countersUrl !== undefined) {
    return openRedisStore({ countersUrl: config.countersUrl, databaseUrl: config.databaseUrl, poolSize: config.pgPoolSize, shortLived: options.shortLived, logger: options.logger });
  }
  if (config.databaseUrl !== undefined) return openPostgresStore({ url: config.databaseUrl, poolSize: config.pgPoolSize });
  // A short-lived admin command writes a row or two: no checkpoint thread for it.
  return openSqliteStore({ dataDir: config.dataDir, synchronous: config.sqliteSync, backgroundCheckpoints: !options.shortLived });
}
