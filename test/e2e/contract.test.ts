/**
 * The end-to-end contract (test/e2e/contract-suite.ts) through `tintype start`: one process,
 * one render slot, the ledger in its SQLite (test/e2e/deployment-start.ts).
 */
import t from 'tap';
import { contractSuite } from './contract-suite.ts';
import { startStartDeployment } from './deployment-start.ts';

// A Chromium render per case on a shared machine: longer than the default per-file limit.
t.setTimeout(900_000);
contractSuite(startStartDeployment);
