import t from 'tap';
import { serverSuite } from './server-suite.ts';

serverSuite(t, 'redis');
