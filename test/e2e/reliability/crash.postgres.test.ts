import { crashTest } from './crash-suite.ts';

crashTest('postgres');
