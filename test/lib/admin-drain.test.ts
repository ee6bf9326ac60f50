/**
 * A pod's preStop on the admin port (lib/admin.ts, docs/helm.md "Rolling restarts"): GET
 * /healthz/drain?wait_s=N fails readiness at once and for good, answers after the wait, and the
 * role keeps serving meanwhile; a bad wait changes nothing.
 */
import http from 'node:http';
import t from 'tap';
import { createAdminServer, DRAIN_PATH, READY_PATH } from '../../lib/admin.ts';

function get(port: number, path: string): Promise<{ status: number; body: any }> { // eslint-disable-line @typescript-eslint/no-explicit-any
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString('utf8')));
      res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
    }).once('error', reject);
  });
}

t.test('the drain fails readiness first, answers after its wait, and readiness stays failed', async (t) => {
  const admin = createAdminServer({ registries: [], ready: () => true });
  await admin.start();
  t.teardown(() => admin.stop());
  const port = admin.port();
  t.equal((await get(port, READY_PATH)).status, 200);
  let answered = false;
  const drain = get(port, `${DRAIN_PATH}?wait_s=1`).then((r) => {
    answered = true;
    return r;
  });
  // Readiness is asked while the preStop is still waiting: it fails, and the hook has not answered.
  const during = await get(port, READY_PATH);
  t.equal(during.status, 503);
  t.same(during.body, { ready: false, draining: true });
  t.equal(answered, false, 'the hook is still waiting: the pod is serving, not yet signalled');
  t.same(await drain, { status: 200, body: { draining: true, waitedS: 1 } });
  t.equal((await get(port, READY_PATH)).status, 503, 'never ready again');
});

t.test('a bad wait is refused and drains nothing', async (t) => {
  const admin = createAdminServer({ registries: [], ready: () => true });
  await admin.start();
  t.teardown(() => admin.stop());
  for (const q of ['wait_s=-1', 'wait_s=301', 'wait_s=1.5', 'wait_s=soon']) {
    const r = await get(admin.port(), `${DRAIN_PATH}?${q}`);
    t.equal(r.status, 400, q);
  }
  t.equal((await get(admin.port(), READY_PATH)).status, 200);
});

t.test('the role is told once, when the first drain begins; a bad wait tells it nothing', async (t) => {
  let told = 0;
  const admin = createAdminServer({ registries: [], ready: () => true, onDrain: () => told++ });
  await admin.start();
  t.teardown(() => admin.stop());
  t.equal((await get(admin.port(), `${DRAIN_PATH}?wait_s=soon`)).status, 400);
  t.equal(told, 0, 'a refused drain is no drain');
  await get(admin.port(), `${DRAIN_PATH}?wait_s=0`);
  t.equal(told, 1);
  await get(admin.port(), `${DRAIN_PATH}?wait_s=0`);
  t.equal(told, 1, 'a second hook does not tell it again');
});
