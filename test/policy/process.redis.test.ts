import t from 'tap';
import { processSuite } from './process-suite.ts';

processSuite(t, 'redis');
