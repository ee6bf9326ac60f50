import t from 'tap';
import { usageSuite } from './usage-suite.ts';

// `tintype usage` and the ledger on a 3-master Redis Cluster (docs/operations.md "Stores").
t.setTimeout(600_000);
usageSuite(t, 'redis-cluster');
