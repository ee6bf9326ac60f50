/** A PostgreSQL that cannot be reached: policy still answers, and fails closed (docs/operations.md "Stores"). */
import t from 'tap';
import net from 'node:net';
import { loadConfig } from '../../lib/config.ts';
import { createLogger } from '../../lib/log.ts';
import { createPolicyServer } from '../../policy/server.ts';
import { openPostgresStore } from '../../policy/store/postgres.ts';
import { request } from './http.ts';
import { TEST_LEASE_ENV, TEST_RENDERER_AUTH, signedLease } from '../lib/leases.ts';
import { EXT_AUTHZ_PREFIX, SETTLE_PATH } from '../../lib/policy-contract.ts';
import { LIVE_PATH, READY_PATH } from '../../lib/admin.ts';

t.test('store down at check time: 503 busy with retry-after 1, not ready', async (t) => {
  // A port that was just free: connecting to it is refused.
  const probe = net.createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  const deadPort = (probe.address() as net.AddressInfo).port;
  await new Promise<void>((r) => probe.close(() => r()));

  const lines: string[] = [];
  const store = openPostgresStore({ url: `postgres://postgres@127.0.0.1:${deadPort}/none`, poolSize: 2 });
  const config = loadConfig({ PORT: '0', ...TEST_LEASE_ENV });
  const server = createPolicyServer({ config, logger: createLogger('policy', { sink: (l) => lines.push(l) }), store, host: '127.0.0.1' });
  await t.rejects(server.start(), 'start-up needs its store (migrations)');
  t.teardown(() => server.stop());

  // Serve anyway, as a policy whose store went away after start-up does.
  const started = createPolicyServer({ config, logger: createLogger('policy', { sink: (l) => lines.push(l) }),
    store: { ...store, migrate: async () => {}, listKeys: async () => [] }, host: '127.0.0.1' });
  await started.start();
  t.teardown(() => started.stop());
  const port = started.address().port;
  const secret = 'sk_' + 'Q'.repeat(43);
  const r = await request(port, 'GET', `${EXT_AUTHZ_PREFIX}/v1/ping`, { authorization: `Bearer ${secret}` });
  t.equal(r.status, 503);
  t.equal(r.body, '{"error":"busy"}');
  t.equal(r.headers['retry-after'], '1');
  t.equal((await request(started.settleAddress().port, 'POST', SETTLE_PATH, { ...TEST_RENDERER_AUTH }, JSON.stringify({ lease: signedLease('ping'), status: 200 }))).status, 503);
  t.equal((await request(port, 'GET', READY_PATH)).status, 503);
  t.equal((await request(port, 'GET', LIVE_PATH)).status, 200);
  t.ok(lines.some((l) => l.includes('store_unavailable')), 'the failure is logged');
  t.notOk(lines.some((l) => l.includes(secret.slice(3))), 'without the key');
});
