import t from 'tap';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfigError } from '../../lib/config.ts';
import { BUILT_IN_PLANS, loadPlans, parsePlans } from '../../policy/plans.ts';

t.test('built-in plans are those of docs/operations.md "Plans"', async (t) => {
  t.same(loadPlans(undefined), {
    free: { monthlyQuota: 100, perMinute: 60, concurrentRenders: 1 },
    starter: { monthlyQuota: 2000, perMinute: 120, concurrentRenders: 2 },
    pro: { monthlyQuota: 10000, perMinute: 180, concurrentRenders: 2 },
    scale: { monthlyQuota: 30000, perMinute: 240, concurrentRenders: 2 },
  });
  t.ok(Object.isFrozen(BUILT_IN_PLANS));
});

t.test('a plans file overrides by name and adds plans', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tintype-plans-'));
  const file = path.join(dir, 'plans.json');
  writeFileSync(file, JSON.stringify({ plans: {
    free: { monthlyQuota: 50, perMinute: 10, concurrentRenders: 1 },
    team: { monthlyQuota: 5000, perMinute: 300, concurrentRenders: 4 },
  } }));
  const plans = loadPlans(file);
  t.same(plans.free, { monthlyQuota: 50, perMinute: 10, concurrentRenders: 1 });
  t.same(plans.team, { monthlyQuota: 5000, perMinute: 300, concurrentRenders: 4 });
  t.same(plans.pro, BUILT_IN_PLANS.pro, 'plans not named keep their limits');
});

t.test('a bad plans file stops with a message naming the field', async (t) => {
  const rows: Array<[string, string, RegExp]> = [
    ['not JSON', '{plans', /TINTYPE_PLANS: not valid JSON/],
    ['array', '[]', /TINTYPE_PLANS: the document must be a JSON object/],
    ['unknown top field', '{"plan": {}}', /unknown field "plan"/],
    ['plans not an object', '{"plans": 3}', /field "plans" must be an object/],
    ['bad name', '{"plans": {"Free Plan": {}}}', /plans\.Free Plan: a plan name/],
    ['plan not an object', '{"plans": {"free": 1}}', /plans\.free must be an object/],
    ['missing field', '{"plans": {"free": {"monthlyQuota": 1, "perMinute": 1}}}', /plans\.free\.concurrentRenders must be a whole number/],
    ['string number', '{"plans": {"free": {"monthlyQuota": "1", "perMinute": 1, "concurrentRenders": 1}}}', /plans\.free\.monthlyQuota must be a whole number/],
    ['fraction', '{"plans": {"free": {"monthlyQuota": 1, "perMinute": 1.5, "concurrentRenders": 1}}}', /plans\.free\.perMinute must be a whole number from 1/],
    ['zero per minute', '{"plans": {"free": {"monthlyQuota": 1, "perMinute": 0, "concurrentRenders": 1}}}', /plans\.free\.perMinute/],
    ['negative quota', '{"plans": {"free": {"monthlyQuota": -1, "perMinute": 1, "concurrentRenders": 1}}}', /plans\.free\.monthlyQuota/],
    ['extra field', '{"plans": {"free": {"monthlyQuota": 1, "perMinute": 1, "concurrentRenders": 1, "burst": 2}}}', /plans\.free\.burst is not a plan field/],
  ];
  for (const [name, text, message] of rows) {
    t.throws(() => parsePlans(text), message, name);
    t.throws(() => parsePlans(text), ConfigError, name);
  }
  t.throws(() => loadPlans('/nonexistent/plans.json'), /TINTYPE_PLANS: cannot read/);
});
