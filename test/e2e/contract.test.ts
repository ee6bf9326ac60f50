/**
 * The end-to-end contract (test/e2e/contract-suite.ts) through `tintype start`: one process,
 * one render slot, the ledger in its SQLite (test/e2e/deployment-start.ts).
 */
import { contractSuite } from './contract-suite.ts';
import { startStartDeployment } from './deployment-start.ts';

contractSuite(startStartDeployment);
