/**
 * The SQLite driver: better-sqlite3 13, built on Node-API (a prebuilt binary in its package,
 * nothing compiled at install), which needs Node 22 or later, package.json's engines (README
 * "Node"). better-sqlite3 12, built on Node's C++ object wrapper, aborted a Node 24 process now and
 * then when a statement was collected outside a JavaScript context (docs/helm.md "The images"); 13
 * has no such hook. Every connection of the process, worker threads' included, comes from here.
 */
import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';

const require = createRequire(import.meta.url);

/** The driver's file, for worker threads that open connections of their own. */
export const sqliteDriverPath: string = require.resolve('better-sqlite3');

/** The driver's Database class. */
const Database: typeof BetterSqlite3 = require(sqliteDriverPath);
export default Database;

/** A connection. */
export type SqliteDatabase = BetterSqlite3.Database;
