import t from 'tap';
import { ConfigError, loadConfig } from '../../lib/config.ts';

t.test('defaults follow README "Settings"', async (t) => {
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
