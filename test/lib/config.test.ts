import t from 'tap';
import { ConfigError, loadConfig, requireLeaseSecrets } from '../../lib/config.ts';
import { MAX_BODY_BYTES } from '../../lib/policy-contract.ts';

t.test('defaults follow docs/operations.md "Settings"', async (t) => {
  const c = loadConfig({});
  t.equal(c.slots, 2);
  t.equal(c.renderTimeoutMs, 30_000);
  t.equal(c.maxOutputBytes, 26_214_400);
  t.equal(c.isolation, 'netns');
  t.equal(c.chromiumUid, 10_999);
  t.equal(c.databaseUrl, undefined);
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
    ['chromium uid root', { TINTYPE_CHROMIUM_UID: '0' }, /TINTYPE_CHROMIUM_UID/],
  ];
  for (const [name, env, message] of rows) {
    t.throws(() => loadConfig(env), message, name);
    t.throws(() => loadConfig(env), ConfigError, name);
  }
});

t.test('limit boundaries', async (t) => {
  t.equal(loadConfig({ TINTYPE_SLOTS: '1' }).slots, 1);
  t.equal(loadConfig({ TINTYPE_SLOTS: '64' }).slots, 64);
  t.same(loadConfig({ GUARD_ALLOW_CIDRS: '10.0.0.0/8, 192.0.2.0/24' }).guardAllowCidrs, ['10.0.0.0/8', '192.0.2.0/24']);
});

t.test('lease secrets and the edge bounds', async (t) => {
  const d = loadConfig({});
  t.same(d.leaseSecrets, [], 'no lease secret unless given (tintype start makes one)');
  t.equal(d.edgeMaxBufferedBytes, 64 * 1024 * 1024);
  t.equal(d.edgeMaxConnections, 1024);
  const a = 'a'.repeat(32);
  const b = 'b'.repeat(40);
  t.same(loadConfig({ TINTYPE_LEASE_SECRET: `${a}, ${b}` }).leaseSecrets, [a, b], 'comma-separated, the first signs');
  t.equal(loadConfig({ TINTYPE_EDGE_MAX_BUFFERED_BYTES: String(MAX_BODY_BYTES) }).edgeMaxBufferedBytes, MAX_BODY_BYTES, 'one whole body at least');
  t.equal(loadConfig({ TINTYPE_EDGE_MAX_CONNECTIONS: '1' }).edgeMaxConnections, 1);
  const rows: Array<[string, Record<string, string>, RegExp]> = [
    ['a secret of 31 characters', { TINTYPE_LEASE_SECRET: `${a},${'c'.repeat(31)}` }, /TINTYPE_LEASE_SECRET must be comma-separated secrets of at least 32 characters/],
    ['buffered bytes under one body', { TINTYPE_EDGE_MAX_BUFFERED_BYTES: String(MAX_BODY_BYTES - 1) }, /TINTYPE_EDGE_MAX_BUFFERED_BYTES/],
    ['buffered bytes not a number', { TINTYPE_EDGE_MAX_BUFFERED_BYTES: '64MiB' }, /TINTYPE_EDGE_MAX_BUFFERED_BYTES/],
    ['no connections', { TINTYPE_EDGE_MAX_CONNECTIONS: '0' }, /TINTYPE_EDGE_MAX_CONNECTIONS/],
  ];
  for (const [name, env, message] of rows) t.throws(() => loadConfig(env), message, name);
  t.throws(() => requireLeaseSecrets(loadConfig({})), /TINTYPE_LEASE_SECRET must be set/, 'a standalone policy or renderer needs one');
});
