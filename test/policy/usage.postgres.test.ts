import t from 'tap';
import { usageSuite } from './usage-suite.ts';

usageSuite(t, 'postgres');
