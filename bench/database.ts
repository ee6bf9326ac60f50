/**
 * A PostgreSQL database of a bench's own on this machine's server (trust auth), named after the
 * bench and the run so two runs never share one, migrated when asked, dropped (even with
 * connections still open) at the end.
 */
import { randomBytes } from 'node:crypto';
import { openPostgresStore } from '../policy/store/postgres.ts';
import { asPgAdmin } from '../test/lib/pg-admin.ts';

export interface BenchDatabase {
  name: string;
  url: string;
  drop(): Promise<void>;
}

/** A fresh database named `<prefix>_<pid>_<random>`, with tintype's migrations applied when `migrate`. */
export async function benchDatabase(prefix: string, options: { migrate: boolean }): Promise<BenchDatabase> {
  const name = `${prefix}_${process.pid}_${randomBytes(3).toString('hex')}`;
  await asPgAdmin(`CREATE DATABASE ${name}`);
  const url = `postgres://postgres@127.0.0.1:5432/${name}`;
  if (options.migrate) {
    const store = openPostgresStore({ url, poolSize: 1 });
    try {
      await store.migrate();
    } finally {
      await store.close();
    }
  }
  return { name, url, drop: () => asPgAdmin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}
