import t from 'tap';
import { rulesSuite } from './rules-suite.ts';

rulesSuite(t, 'redis');
