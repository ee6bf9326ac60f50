import t from 'tap';
import { rulesSuite } from './rules-suite.ts';

// The counters in a 3-master Redis Cluster: a key's state on one slot, the ledger stream, the
// expiry schedule and the lease index on others (docs/operations.md "Stores").
rulesSuite(t, 'redis-cluster');
