/**
 * The SQLite driver for the Node this process runs on (docs/helm.md "The images").
 *
 * better-sqlite3 12 is built on Node's C++ object wrapper. From Node 24 that wrapper removes an
 * environment hook when a statement is collected, and asserts there is a current environment:
 * a collection outside one aborts the process (`Assertion failed: (env) != nullptr`, exit 134),
 * now and then, at any time. better-sqlite3 13 is built on Node-API and has no such hook, but it
 * needs Node 22 or later and crashes on Node 20. So the lockfile holds both, 13 under the alias
 * `better-sqlite3-napi` (a prebuilt binary, nothing compiled at install), and every connection
 * of the process, worker threads' included, comes from the one this module picks: 13 from Node
 * 22 on (the images run Node 24), 12 on the checkout's Node 20. Their API is the same.
 */
import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';

/** The first Node major that runs better-sqlite3 13. */
const NODE_API_DRIVER_FROM = 22;

function driverName(nodeVersion: string): string {
  const major = Number(nodeVersion.split('.')[0]);
  return major >= NODE_API_DRIVER_FROM ? 'better-sqlite3-napi' : 'better-sqlite3';
}

const require = createRequire(import.meta.url);

/** The driver's file, for worker threads that open connections of their own. */
export const sqliteDriverPath: string = require.resolve(driverName(process.versions.node));

/** The driver's Database class. */
const Database: typeof BetterSqlite3 = require(sqliteDriverPath);
export default Database;

/** A connection, whichever driver opened it. */
export type SqliteDatabase = BetterSqlite3.Database;
