import t from 'tap';
import { singleUseSuite } from './single-use-suite.ts';

singleUseSuite(t, 'redis');
