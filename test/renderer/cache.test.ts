import t, { type Test } from 'tap';
import { chmod, mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { createLogger } from '../../lib/log.ts';
import { CACHE_TTL_MS, FileCache, RedisCache, type RenderCache } from '../../renderer/cache/index.ts';
import { HotEntries } from '../../renderer/cache/hot.ts';

const logger = createLogger('test', { sink: () => undefined });
const REDIS_URL = 'redis://127.0.0.1:6379';
const png = (n: number) => ({ body: Buffer.alloc(n, 7), contentType: 'image/png' });

/** The behaviour both backends share (RenderCache in renderer/cache/cache.ts). */
async function contract(t: Test, make: () => Promise<RenderCache>): Promise<void> {
  const cache = await make();
  t.teardown(() => cache.stop());
  t.ok(cache.healthy(), 'healthy once started');
  t.equal(await cache.get('absent'), undefined, 'a miss is undefined');
  await cache.set('pdf:v1:aa', { body: Buffer.from('%PDF-1.7 body'), contentType: 'application/pdf' });
  const hit = await cache.get('pdf:v1:aa');
  t.equal(hit?.contentType, 'application/pdf');
  t.equal(hit?.body.toString(), '%PDF-1.7 body');
  await cache.set('pdf:v1:aa', png(3));
  t.same((await cache.get('pdf:v1:aa'))?.body, Buffer.alloc(3, 7), 'a second store replaces the entry');
  t.equal(await cache.get('pdf:v1:ab'), undefined, 'keys do not bleed into each other');
  const big = Buffer.from(randomBytes(300_000));
  await cache.set('k:big', { body: big, contentType: 'image/jpeg' });
  t.ok((await cache.get('k:big'))?.body.equals(big), 'binary bodies round-trip byte for byte');
}

t.test('file cache', async (t) => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'tintype-cache-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));

  t.test('contract', (t) => contract(t, async () => {
    const c = new FileCache({ dir: path.join(dir, 'contract'), maxBytes: 10_000_000, logger });
    await c.start();
    return c;
  }));

  t.test('contract, with no entry held in memory', (t) => contract(t, async () => {
    const c = new FileCache({ dir: path.join(dir, 'cold'), maxBytes: 10_000_000, logger, hotBytes: 0 });
    await c.start();
    return c;
  }));

  t.test('a hit on a hot entry reads no file; a cold one is read, then held', async (t) => {
    const d = path.join(dir, 'hot');
    const c = new FileCache({ dir: d, maxBytes: 1_000_000, logger });
    await c.start();
    await c.set('k', png(100));
    const [name] = await readdir(d);
    await writeFile(path.join(d, name!), 'overwritten behind the cache');
    t.same((await c.get('k'))?.body, Buffer.alloc(100, 7), 'served from memory');
    await c.stop();
    const again = new FileCache({ dir: d, maxBytes: 1_000_000, logger });
    await again.start();
    t.equal(await again.get('k'), undefined, 'after a restart the file is read, and a bad one is a miss');
    await again.set('k', png(50));
    await again.stop();
    const third = new FileCache({ dir: d, maxBytes: 1_000_000, logger });
    await third.start();
    t.same((await third.get('k'))?.body, Buffer.alloc(50, 7), 'read from the file');
    await rm(path.join(d, name!));
    t.same((await third.get('k'))?.body, Buffer.alloc(50, 7), 'then held in memory');
  });

  t.test('hot entries: least recently used leave first, within the bound', (t) => {
    const h = new HotEntries(3_000);
    const e = (n: number) => ({ key: 'k', body: Buffer.alloc(n), contentType: 'image/png', expiresAt: 1 });
    h.set('a', e(300));
    h.set('b', e(300));
    h.get('a');
    for (let i = 0; i < 9; i++) h.set(`x${i}`, e(300));
    t.ok(h.get('a'), 'a used entry stays');
    t.equal(h.get('b'), undefined, 'the least recently used went');
    t.ok(h.size() <= 3_000, 'within the bound');
    h.set('big', e(376));
    t.equal(h.get('big'), undefined, 'an entry over an eighth of the bound is not held');
    h.delete('a');
    t.equal(h.get('a'), undefined);
    h.clear();
    t.equal(h.size(), 0);
    t.end();
  });

  t.test('24-hour expiry on a fake clock', async (t) => {
    let now = 1_000_000;
    const c = new FileCache({ dir: path.join(dir, 'ttl'), maxBytes: 10_000_000, logger, now: () => now });
    await c.start();
    await c.set('k', png(10));
    now += CACHE_TTL_MS - 1;
    t.ok(await c.get('k'), 'still there 1 ms before 24 h');
    now += 1;
    t.equal(await c.get('k'), undefined, 'gone at 24 h');
    t.same(await readdir(path.join(dir, 'ttl')), [], 'the expired file is removed');
    t.equal(c.size(), 0);
  });

  t.test('size bound evicts the oldest entries first', async (t) => {
    const d = path.join(dir, 'bound');
    const c = new FileCache({ dir: d, maxBytes: 3_500, logger });
    await c.start();
    await c.set('a', png(1000));
    await c.set('b', png(1000));
    await c.set('c', png(1000));
    t.ok(await c.get('a'), 'three entries fit');
    await c.set('d', png(1000));
    t.equal(await c.get('a'), undefined, 'the oldest went first');
    t.ok(await c.get('b'));
    t.ok(await c.get('d'));
    t.ok(c.size() <= 3_500, 'within the bound');
    await c.set('huge', png(10_000));
    t.equal(await c.get('huge'), undefined, 'an entry larger than the bound is not stored');
    t.ok(await c.get('b'), 'and evicts nothing');
  });

  t.test('writes are atomic: no temporary file remains, leftovers are cleared at start', async (t) => {
    const d = path.join(dir, 'atomic');
    const c = new FileCache({ dir: d, maxBytes: 1_000_000, logger });
    await c.start();
    await c.set('x', png(500));
    const names = await readdir(d);
    t.equal(names.length, 1);
    t.notOk(names[0]!.startsWith('.tmp-'));
    t.notMatch(names[0]!, 'x', 'file names are hashes, not keys');
    await writeFile(path.join(d, '.tmp-half-written'), 'partial');
    await writeFile(path.join(d, 'garbage'), 'not an entry');
    const again = new FileCache({ dir: d, maxBytes: 1_000_000, logger });
    await again.start();
    t.same(await readdir(d), names, 'only the complete entry remains after a restart');
    t.ok(await again.get('x'), 'and is served');
    t.equal(again.size(), c.size(), 'sizes are recounted at start');
  });

  t.test('other local users can read nothing: directory 0700, entries 0600, whatever the umask', async (t) => {
    const modeOf = async (p: string) => ((await stat(p)).mode & 0o777).toString(8);
    const umask = process.umask(0o022); // the usual one: 0755 and 0644 without care
    t.teardown(() => process.umask(umask));
    const d = path.join(dir, 'modes', 'cache');
    const c = new FileCache({ dir: d, maxBytes: 1_000_000, logger });
    await c.start();
    t.equal(await modeOf(d), '700', 'a new cache directory');
    await c.set('a', png(10));
    await c.set('a', png(20));
    // Each entry is its temporary file renamed into place, so the entry's mode is the one the
    // temporary file was created with: a half-written render is never readable by others either.
    const [entry] = await readdir(d);
    t.equal(await modeOf(path.join(d, entry!)), '600', 'an entry, stored and stored again');
    // Left with wider modes by an older version: narrowed at start.
    await chmod(d, 0o755);
    await chmod(path.join(d, entry!), 0o644);
    const again = new FileCache({ dir: d, maxBytes: 1_000_000, logger });
    await again.start();
    t.equal(await modeOf(d), '700', 'an existing directory is narrowed');
    t.equal(await modeOf(path.join(d, entry!)), '600', 'an existing entry is narrowed');
    t.ok(await again.get('a'), 'and still served');
  });

  t.test('a store it cannot write is skipped, logged when it begins, changes cause and ends', async (t) => {
    const d = path.join(dir, 'unwritable');
    const lines: Array<{ level: string; event: string; code?: string; after?: string }> = [];
    const c = new FileCache({ dir: d, maxBytes: 1_000_000, logger: createLogger('test', { sink: (l) => lines.push(JSON.parse(l)) }) });
    await c.start();
    const failures = () => lines.filter((l) => l.event === 'cache.store_failed').map((l) => `${l.level} ${l.code}`);
    // The directory turned into a file: no entry can be written into it (ENOTDIR).
    await rm(d, { recursive: true });
    await writeFile(d, 'not a directory');
    for (let i = 0; i < 3; i++) await c.set(`notdir-${i}`, png(10));
    t.same(failures(), ['warn ENOTDIR'], 'three skipped stores, one line');
    // The directory gone (ENOENT): another cause, said once more.
    await rm(d);
    for (let i = 0; i < 2; i++) await c.set(`gone-${i}`, png(10));
    t.same(failures(), ['warn ENOTDIR', 'warn ENOENT'], 'a new cause, one more line');
    t.equal(await c.get('notdir-0'), undefined, 'a skipped store is a miss');
    await mkdir(d, { mode: 0o700 });
    await c.set('back', png(10));
    await c.set('back-again', png(10));
    t.same(lines.filter((l) => l.event === 'cache.store_resumed').map((l) => `${l.level} ${l.after}`), ['info ENOENT'], 'the end, once');
    t.ok(await c.get('back'), 'stored again once it can be');
    t.equal(failures().length, 2, 'no failure line while stores succeed');
  });

  t.test('entries expired while stopped are dropped at start', async (t) => {
    let now = 5_000;
    const d = path.join(dir, 'restart');
    const c = new FileCache({ dir: d, maxBytes: 1_000_000, logger, now: () => now });
    await c.start();
    await c.set('old', png(10));
    now += CACHE_TTL_MS;
    const again = new FileCache({ dir: d, maxBytes: 1_000_000, logger, now: () => now });
    await again.start();
    t.same(await readdir(d), []);
  });
});

t.test('redis cache', async (t) => {
  const prefix = `tintype-test:${process.pid}:${randomBytes(4).toString('hex')}:`;
  const make = async (p = prefix, ttlMs?: number) => {
    const c = new RedisCache({ url: REDIS_URL, logger, keyPrefix: p, ...(ttlMs === undefined ? {} : { ttlMs }) });
    await c.start();
    return c;
  };
  const admin = await make();
  t.teardown(async () => {
    await admin.clearPrefix();
    await admin.stop();
  });

  t.test('contract', (t) => contract(t, () => make()));

  t.test('entries carry a 24-hour PX expiry', async (t) => {
    await admin.set('ttl', png(4));
    const left = await admin.ttlLeft('ttl');
    t.ok(left > CACHE_TTL_MS - 60_000 && left <= CACHE_TTL_MS, `pttl ${left}`);
  });

  t.test('an entry is gone once its expiry passes', async (t) => {
    const short = await make(prefix, 50);
    t.teardown(() => short.stop());
    await short.set('brief', png(4));
    t.ok(await short.get('brief'));
    await new Promise((r) => setTimeout(r, 120));
    t.equal(await short.get('brief'), undefined);
  });

  t.test('two instances share entries (the shared cache of several renderers)', async (t) => {
    const other = await make();
    t.teardown(() => other.stop());
    await admin.set('shared', png(8));
    t.same((await other.get('shared'))?.body, Buffer.alloc(8, 7));
  });

  t.test('an unreachable Redis is a miss and a skipped store, not a failure', async (t) => {
    const down = new RedisCache({ url: 'redis://127.0.0.1:1', logger, keyPrefix: prefix, commandTimeoutMs: 200 });
    await down.start().catch(() => undefined);
    t.teardown(() => down.stop());
    t.notOk(down.healthy());
    t.equal(await down.get('x'), undefined);
    await down.set('x', png(1));
    t.pass('set resolved');
  });
});
