import t from 'tap';
import { parseRedisUrl } from '../../lib/redis-connect.ts';

t.test('the Sentinel and Cluster URL forms (docs/operations.md "Settings")', async (t) => {
  t.same(parseRedisUrl('redis://:pw@r:6379/3'), { kind: 'server', url: 'redis://:pw@r:6379/3' }, 'one server: as ioredis reads it');
  t.same(parseRedisUrl('redis+sentinel://s1:26379,s2,[::1]:26380/counters'), {
    kind: 'sentinel', tls: false, nodes: [{ host: 's1', port: 26379 }, { host: 's2', port: 26379 }, { host: '::1', port: 26380 }], masterName: 'counters', db: 0,
  });
  t.same(parseRedisUrl('rediss+sentinel://us%40er:p%3Aw@s1:1/my%20master/4'), {
    kind: 'sentinel', tls: true, username: 'us@er', password: 'p:w', nodes: [{ host: 's1', port: 1 }], masterName: 'my master', db: 4,
  });
  t.same(parseRedisUrl('redis+cluster://:pw@n1:7000,n2:7001'), { kind: 'cluster', tls: false, password: 'pw', nodes: [{ host: 'n1', port: 7000 }, { host: 'n2', port: 7001 }] });
  t.same(parseRedisUrl('rediss+cluster://n1'), { kind: 'cluster', tls: true, nodes: [{ host: 'n1', port: 6379 }] });
  t.throws(() => parseRedisUrl('redis+cluster://user@n1:7000'), /without a password/);
  t.throws(() => parseRedisUrl('redis+cluster://n1:7000,'), /host:port/);
  t.throws(() => parseRedisUrl('redis+sentinel://s1:26379/m/0/1'), /masterName/);
  t.throws(() => parseRedisUrl('http://x'), /unknown scheme/);
});
