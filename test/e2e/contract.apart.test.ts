/**
 * The end-to-end contract (test/e2e/contract-suite.ts) through the roles apart: policy on
 * PostgreSQL, the guard in its own namespace, two renderer pods behind the embedded edge, the
 * Redis cache (test/e2e/deployment-apart.ts). Needs root (network namespaces).
 */
import t from 'tap';
import { contractSuite } from './contract-suite.ts';
import { startApartDeployment } from './deployment-apart.ts';

// Seven processes and two Chromiums start on a shared machine: longer than the default limit.
t.setTimeout(900_000);
contractSuite((o) => startApartDeployment(o));
