/**
 * Dependencies lost under load (docs/operations.md "What it survives"), each on an instance of its own:
 * PostgreSQL stopped and started (503 `busy`, never a 500, served again without a restart,
 * metering off only for calls in flight), Redis stopped and started (renders still served), the
 * data directory's disk full (renders still served, the file cache skipped and said so once). The
 * full disk is a tmpfs mounted for the test, so it runs as root, as CI runs it.
 */
import t from 'tap';
import { diskFull, postgresOutage, redisOutage } from './dependencies.ts';

t.setTimeout(900_000);
const PHASE_MS = 4_000;

t.test('PostgreSQL stopped and started under load', async (t) => {
  const f = await postgresOutage({ clients: 8, phaseMs: PHASE_MS, seed: 5 });
  t.equal(f.pg_outage_5xx_other, 0, 'no 5xx but 503 busy');
  // Metering at commit: only a call in flight when the store went away can be metered without
  // its client receiving the answer (docs/operations.md "What it survives").
  t.ok(f.pg_outage_double_counted <= f.pg_outage_in_flight, `metered but not received only among the calls in flight (${f.pg_outage_double_counted} of ${f.pg_outage_in_flight})`);
  t.ok(Number.isFinite(f.recovery_ms), 'served again without a restart');
});

t.test('Redis stopped and started while rendering', async (t) => {
  t.equal(await redisOutage({ phaseMs: PHASE_MS }), 0, 'every render was served');
});

t.test('the data directory full while rendering', async (t) => {
  const f = await diskFull({ phaseMs: PHASE_MS });
  t.ok(f.renders > 0, `renders were made (${f.renders})`);
  t.equal(f.failed, 0, `every render was served: ${JSON.stringify(f.failures)}`);
  t.equal(f.storeFailedLines, 1, 'the cache said once that it cannot store');
});
