/**
 * This machine's PostgreSQL as its superuser (trust auth), through which tests and benches make
 * and drop databases of their own.
 */
import pg from 'pg';

export const PG_ADMIN_URL = 'postgres://postgres@127.0.0.1:5432/postgres';

/** Runs one statement (CREATE DATABASE, DROP DATABASE …) as the superuser, on a connection of its own. */
export async function asPgAdmin(sql: string): Promise<void> {
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  admin.on('error', () => {});
  await admin.connect();
  try {
    await admin.query(sql);
  } finally {
    await admin.end();
  }
}
