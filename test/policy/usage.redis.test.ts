import t from 'tap';
import { usageSuite } from './usage-suite.ts';

// Several runs of the real program and a policy process, on a machine other suites share.
t.setTimeout(600_000);
usageSuite(t, 'redis');
