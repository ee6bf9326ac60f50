import t from 'tap';
import { generateKeyPairSync } from 'node:crypto';
import { ConfigError, loadConfig, requireLeasePublicKeys, requireLeaseSigningKey } from '../../lib/config.ts';
import { leaseKeyText } from '../../lib/lease.ts';

t.test('defaults follow docs/operations.md "Settings"', async (t) => {
  const c = loadConfig({});
  t.equal(c.slots, 2);
  t.equal(c.renderTimeoutMs, 30_000);
  t.equal(c.maxOutputBytes, 26_214_400);
  t.equal(c.isolation, 'netns');
  t.equal(c.chromiumUid, 10_999);
  t.equal(c.databaseUrl, undefined);
  t.equal(c.ledgerMonths, undefined, 'every ledger month kept');
  t.same(c.guardAllowCidrs, []);
  t.ok(Object.isFrozen(c));
});

t.test('bad values stop with a message naming the variable', async (t) => {
  const rows: Array<[string, Record<string, string>, RegExp]> = [
    ['slots not a number', { TINTYPE_SLOTS: 'two' }, /TINTYPE_SLOTS/],
    ['slots zero', { TINTYPE_SLOTS: '0' }, /TINTYPE_SLOTS/],
    ['slots above range', { TINTYPE_SLOTS: '65' }, /TINTYPE_SLOTS/],
    ['port not a number', { PORT: '80a' }, /PORT/],
    ['isolation unknown', { TINTYPE_ISOLATION: 'vm' }, /TINTYPE_ISOLATION must be one of netns, pod/],
    ['database url not postgres', { DATABASE_URL: 'mysql://x' }, /DATABASE_URL/],
    ['redis url garbage', { REDIS_URL: 'not a url' }, /REDIS_URL/],
    ['counters url not redis', { DATABASE_URL: 'postgres://db/x', TINTYPE_COUNTERS_URL: 'http://x' }, /TINTYPE_COUNTERS_URL/],
    ['counters without a database', { TINTYPE_COUNTERS_URL: 'redis://r:6379' }, /TINTYPE_COUNTERS_URL needs DATABASE_URL/],
    ['chromium uid root', { TINTYPE_CHROMIUM_UID: '0' }, /TINTYPE_CHROMIUM_UID/],
    ['ledger months zero', { TINTYPE_LEDGER_MONTHS: '0' }, /TINTYPE_LEDGER_MONTHS must be a whole number from 1/],
    ['ledger months not a number', { TINTYPE_LEDGER_MONTHS: 'a year' }, /TINTYPE_LEDGER_MONTHS/],
  ];
  for (const [name, env, message] of rows) {
    t.throws(() => loadConfig(env), message, name);
    t.throws(() => loadConfig(env), ConfigError, name);
  }
});

t.test('limit boundaries', async (t) => {
  t.equal(loadConfig({ TINTYPE_SLOTS: '1' }).slots, 1);
  t.equal(loadConfig({ TINTYPE_SLOTS: '64' }).slots, 64);
  t.equal(loadConfig({ TINTYPE_LEDGER_MONTHS: '13' }).ledgerMonths, 13);
  t.same(loadConfig({ GUARD_ALLOW_CIDRS: '10.0.0.0/8, 192.0.2.0/24' }).guardAllowCidrs, ['10.0.0.0/8', '192.0.2.0/24']);
});

t.test('lease keys and the edge bounds', async (t) => {
  const d = loadConfig({});
  t.equal(d.leaseSigningKey, undefined, 'no signing key unless given (tintype start makes a pair)');
  t.same(d.leasePublicKeys, []);
  t.equal(d.policyUsageOpen, false, 'policy answers /usage on its admin socket only unless opened');
  t.equal(d.rendererToken, undefined);
  t.equal(d.policyMaxConnections, 1024);
  t.equal(loadConfig({ TINTYPE_POLICY_USAGE_OPEN: 'true' }).policyUsageOpen, true);
  t.equal(d.edgeMaxConnections, 1024);
  const a = generateKeyPairSync('ed25519');
  const b = generateKeyPairSync('ed25519');
  const keys = loadConfig({ TINTYPE_LEASE_SIGNING_KEY: leaseKeyText(a.privateKey), TINTYPE_LEASE_PUBLIC_KEYS: `${leaseKeyText(a.publicKey)}, ${leaseKeyText(b.publicKey)}` });
  t.ok(keys.leaseSigningKey!.equals(a.privateKey), 'the signing key');
  t.same(keys.leasePublicKeys.map((k) => leaseKeyText(k)), [leaseKeyText(a.publicKey), leaseKeyText(b.publicKey)], 'comma-separated public keys');
  t.equal(loadConfig({ TINTYPE_EDGE_MAX_CONNECTIONS: '1' }).edgeMaxConnections, 1);
  // A PKCS#8 Ed25519 key is a fixed 16-byte prefix and the 32-byte seed.
  const prefix = (a.privateKey.export({ format: 'der', type: 'pkcs8' }) as Buffer).subarray(0, 16);
  const seeded = (seed: Buffer): string => Buffer.concat([prefix, seed]).toString('base64');
  const rows: Array<[string, Record<string, string>, RegExp]> = [
    ['the old HMAC secret', { TINTYPE_LEASE_SECRET: 'x'.repeat(43) }, /TINTYPE_LEASE_SECRET is no longer read: set TINTYPE_LEASE_SIGNING_KEY/],
    ['a signing key that is not a key', { TINTYPE_LEASE_SIGNING_KEY: 'not-a-key' }, /TINTYPE_LEASE_SIGNING_KEY must be an Ed25519 private key/],
    ['a public key where the signing key goes', { TINTYPE_LEASE_SIGNING_KEY: leaseKeyText(a.publicKey) }, /TINTYPE_LEASE_SIGNING_KEY must be an Ed25519 private key/],
    ['a seed of 32 × a', { TINTYPE_LEASE_SIGNING_KEY: seeded(Buffer.alloc(32, 'a')) }, /TINTYPE_LEASE_SIGNING_KEY is not random enough/],
    ['a seed of a short pattern repeated', { TINTYPE_LEASE_SIGNING_KEY: seeded(Buffer.from('0123456789'.repeat(4).slice(0, 32))) }, /TINTYPE_LEASE_SIGNING_KEY is not random enough/],
    ['a private key among the public ones', { TINTYPE_LEASE_PUBLIC_KEYS: `${leaseKeyText(a.publicKey)},${leaseKeyText(b.privateKey)}` }, /TINTYPE_LEASE_PUBLIC_KEYS must be comma-separated Ed25519 public keys/],
    ['a renderer token too short', { TINTYPE_RENDERER_TOKEN: 'x'.repeat(31) }, /TINTYPE_RENDERER_TOKEN must be 32 to 256 URL-safe characters/],
    ['a renderer token with a space', { TINTYPE_RENDERER_TOKEN: 'x'.repeat(20) + ' ' + 'y'.repeat(20) }, /TINTYPE_RENDERER_TOKEN must be/],
    ['policy connections under 4', { TINTYPE_POLICY_MAX_CONNECTIONS: '3' }, /TINTYPE_POLICY_MAX_CONNECTIONS/],
    ['no connections', { TINTYPE_EDGE_MAX_CONNECTIONS: '0' }, /TINTYPE_EDGE_MAX_CONNECTIONS/],
    ['usage open neither true nor false', { TINTYPE_POLICY_USAGE_OPEN: 'yes' }, /TINTYPE_POLICY_USAGE_OPEN must be one of true, false/],
  ];
  for (const [name, env, message] of rows) t.throws(() => loadConfig(env), message, name);
  t.ok(loadConfig({ TINTYPE_LEASE_SIGNING_KEY: seeded(Buffer.from(Array.from({ length: 32 }, (_v, i) => i * 7))) }).leaseSigningKey, 'a seed of 32 different bytes passes');
  t.throws(() => requireLeaseSigningKey(loadConfig({})), /TINTYPE_LEASE_SIGNING_KEY must be set on policy/, 'a standalone policy needs its private key');
  t.throws(() => requireLeasePublicKeys(loadConfig({})), /TINTYPE_LEASE_PUBLIC_KEYS must be set on every renderer/, 'a standalone renderer needs public keys');
});

t.test('the counters store is chosen only by TINTYPE_COUNTERS_URL, never by REDIS_URL (docs/operations.md "Settings")', async (t) => {
  t.equal(loadConfig({ DATABASE_URL: 'postgres://db/x', REDIS_URL: 'redis://cache:6379' }).countersUrl, undefined, 'the cache\'s Redis is not the counters\'');
  t.equal(loadConfig({ DATABASE_URL: 'postgres://db/x', TINTYPE_COUNTERS_URL: 'redis://counters:6379' }).countersUrl, 'redis://counters:6379');
  t.equal(loadConfig({ REDIS_URL: 'redis://cache:6379' }).countersUrl, undefined, 'tintype start with a cache: SQLite, no counters');
});

t.test('TINTYPE_COUNTERS_URL takes Sentinel and Cluster URLs; a bad one is refused without echoing it (docs/operations.md "Settings")', async (t) => {
  const db = { DATABASE_URL: 'postgres://db/x' };
  for (const u of [
    'redis+sentinel://:s3cret@s1:26379,s2:26379,s3:26379/counters',
    'rediss+sentinel://user:s3cret@s1:26379/counters/2',
    'redis+cluster://n1:6379,n2:6379,n3:6379',
    'rediss+cluster://user:s3cret@n1:6379',
  ]) t.equal(loadConfig({ ...db, TINTYPE_COUNTERS_URL: u }).countersUrl, u, u.replace('s3cret', '***'));
  for (const u of [
    'redis+sentinel://:s3cret@s1:26379',
    'redis+sentinel://:s3cret@s1:26379/counters/x',
    'redis+cluster://:s3cret@n1:6379/0',
    'redis+cluster://:s3cret@n1:99999',
    'redis+bogus://:s3cret@n1:6379',
  ]) {
    try {
      loadConfig({ ...db, TINTYPE_COUNTERS_URL: u });
      t.fail(`accepted ${u.replace('s3cret', '***')}`);
    } catch (err) {
      t.match((err as Error).message, /^TINTYPE_COUNTERS_URL has .* it must be one of redis:\/\//);
      t.notMatch((err as Error).message, /s3cret|n1|s1/, 'the value is not quoted');
    }
  }
});
