/**
 * The drain (lib/admin.ts, docs/helm.md "Rolling restarts", docs/security.md "The meter's walls"):
 * no request begins one, since whatever reaches the admin port (the browser container on the
 * renderer pod's loopback, Prometheus's peer) could otherwise make a role unready for good. A
 * role drains at SIGTERM only: readiness fails, it keeps serving for TINTYPE_TERM_DRAIN_S, then
 * it stops; so every drain ends in a stop. Through a real `tintype guard` process.
 */
import http from 'node:http';
import t from 'tap';
import { createAdminServer, READY_PATH } from '../../lib/admin.ts';
import { GUARD_REASON_HEADER } from '../../lib/guard-contract.ts';
import { startCanary, startGuardProcess, viaGuard } from '../guard/helpers.ts';

function send(port: number, method: string, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    http.request({ host: '127.0.0.1', port, path, method, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    }).once('error', reject).end();
  });
}

/** What a stranger on the admin port tries: the old preStop path, spelt every way. */
const DRAIN_ATTEMPTS: Array<[string, string]> = [
  ['GET', '/healthz/drain'],
  ['GET', '/healthz/drain?wait_s=0'],
  ['GET', '/healthz/drain?wait_s=300'],
  ['HEAD', '/healthz/drain?wait_s=1'],
  ['POST', '/healthz/drain'],
  ['GET', '/healthz/drain/'],
];

t.test('no request to the admin port drains a role: readiness stays 200', async (t) => {
  let told = 0;
  const admin = createAdminServer({ registries: [], ready: () => true, onDrain: () => told++ });
  await admin.start();
  t.teardown(() => admin.stop());
  for (const [method, path] of DRAIN_ATTEMPTS) {
    t.not((await send(admin.port(), method, path)).status, 200, `${method} ${path}`);
    t.equal((await send(admin.port(), 'GET', READY_PATH)).status, 200, `still ready after ${method} ${path}`);
  }
  t.equal(told, 0, 'the role was never told to drain');
  t.notOk(admin.draining());
});

t.test('drain(): readiness fails for good and the role is told once', async (t) => {
  let told = 0;
  const admin = createAdminServer({ registries: [], ready: () => true, onDrain: () => told++ });
  await admin.start();
  t.teardown(() => admin.stop());
  admin.drain();
  admin.drain();
  const r = await send(admin.port(), 'GET', READY_PATH);
  t.equal(r.status, 503);
  t.same(JSON.parse(r.body), { ready: false, draining: true });
  t.equal(told, 1);
});

t.test('a real guard: the admin port cannot drain it; SIGTERM drains, serves through the wait, then stops', async (t) => {
  const canary = await startCanary('127.0.0.2');
  t.teardown(() => canary.close());
  const g = await startGuardProcess({ PORT: '0', TINTYPE_ADMIN_PORT: '0', TINTYPE_TERM_DRAIN_S: '3' });
  t.teardown(() => g.child.kill('SIGKILL'));
  for (const [method, path] of DRAIN_ATTEMPTS) await send(g.adminPort, method, path);
  t.equal((await send(g.adminPort, 'GET', READY_PATH)).status, 200, 'ready after every drain attempt over the network');

  const exited = g.exited;
  let gone = false;
  void exited.then(() => (gone = true));
  g.child.kill('SIGTERM');
  // Readiness fails while the guard still judges requests.
  let ready = 200;
  while (ready === 200) ready = (await send(g.adminPort, 'GET', READY_PATH)).status;
  t.equal(ready, 503, 'unready from SIGTERM on');
  const judged = await viaGuard({ port: g.port }, `http://127.0.0.2:${canary.port}/`);
  t.equal(judged.headers[GUARD_REASON_HEADER], 'private_address', 'and still serving through the wait');
  t.notOk(gone, 'not yet stopped');
  t.equal(await exited, 0, 'then it stops: the drain ended in the stop');
  t.ok(g.lines.some((l) => l.event === 'draining' && l.wait_s === 3));
  t.equal(canary.accepted(), 0);
});

t.test('without TINTYPE_TERM_DRAIN_S, SIGTERM stops at once (one machine, a terminal)', async (t) => {
  const g = await startGuardProcess({ PORT: '0', TINTYPE_ADMIN_PORT: '0' });
  t.teardown(() => g.child.kill('SIGKILL'));
  g.child.kill('SIGTERM');
  t.equal(await g.exited, 0);
  t.notOk(g.lines.some((l) => l.event === 'draining'));
});
