/**
 * At start the renderer says when the cache's Redis answers a client with no credentials
 * (docs/security.md "In a cluster"): the browser container shares the renderer pod's network and
 * reaches Redis's port, so a default user left on opens every key to it. Against real Redis
 * servers: one that answers anyone, and one of this test's own whose default user is off.
 */
import t from 'tap';
import { Redis } from 'ioredis';
import { loadConfig } from '../../lib/config.ts';
import { createLogger } from '../../lib/log.ts';
import { Registry } from '../../lib/metrics.ts';
import { createRenderCache } from '../../renderer/cache/index.ts';
import { startRedis } from '../e2e/reliability/instances.ts';

/** Starts the cache as the renderer does, and says what it logged and what its gauge reads. */
async function startCache(url: string): Promise<{ warned: boolean; gauge: string | undefined }> {
  const lines: string[] = [];
  const registry = new Registry();
  const cache = createRenderCache(loadConfig({ REDIS_URL: url }), createLogger('renderer', { sink: (l) => lines.push(l) }), registry);
  await cache.start();
  await cache.stop();
  return {
    warned: lines.some((l) => JSON.parse(l).event === 'cache.redis_unauthenticated'),
    gauge: /^tintype_cache_redis_unauthenticated (\d+)$/m.exec(registry.render())?.[1],
  };
}

t.test('a Redis that answers anyone: a warning at start and the gauge at 1', async (t) => {
  t.same(await startCache('redis://127.0.0.1:6379'), { warned: true, gauge: '1' });
});

t.test('a Redis whose default user is off: no warning, the gauge at 0, and the cache works with its own user', async (t) => {
  const redis = await startRedis();
  t.teardown(() => redis.destroy());
  const port = redis.port;
  const admin = new Redis(redis.url);
  await admin.call('ACL', 'SETUSER', 'tintype-cache', 'on', '>cache-password', 'resetkeys', '~tintype:render:*', '-@all', '+get', '+set', '+pttl', '+info', '+select', '+ping', '+quit');
  await admin.call('ACL', 'SETUSER', 'default', 'off');
  admin.disconnect();
  t.same(await startCache(`redis://tintype-cache:cache-password@127.0.0.1:${port}`), { warned: false, gauge: '0' });
});
