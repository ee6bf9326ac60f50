/**
 * `tintype guard` at SIGTERM (docs/helm.md, "Rolling restarts"): a tunnel a render is using stays
 * open for the render budget (TINTYPE_RENDER_TIMEOUT_MS), as the pod's grace period allows, not a
 * fixed 5 s; the guard exits once it is closed.
 */
import net from 'node:net';
import http from 'node:http';
import t from 'tap';
import { closeServer, listenOn } from './helpers.ts';
import { spawnTintype } from '../tintype.ts';
import { TEST_LEASE_ENV } from '../lib/leases.ts';

t.test('a tunnel open at SIGTERM keeps working past 5 s, within the render budget', async (t) => {
  const echo = net.createServer((c) => c.pipe(c));
  const port = await listenOn(echo as unknown as http.Server, '127.0.0.5');
  t.teardown(() => closeServer(echo as unknown as http.Server));
  let guardPort = 0;
  let guard!: ReturnType<typeof spawnTintype>;
  const ready = new Promise<void>((resolve) => {
    const g = spawnTintype('guard', { PORT: '0', TINTYPE_ADMIN_PORT: '0', GUARD_ALLOW_CIDRS: '127.0.0.5/32', TINTYPE_RENDER_TIMEOUT_MS: '9000', GUARD_TOKEN_KEY: TEST_LEASE_ENV.GUARD_TOKEN_KEY }, (line) => {
      if (line.event === 'guard.listening') guardPort = Number(line.port);
      if (line.event === 'guard.admin_listening') resolve();
    });
    guard = g;
  });
  await ready;
  t.teardown(() => guard.child.kill('SIGKILL'));
  const tunnel = await new Promise<net.Socket>((resolve, reject) => {
    http.request({ host: '127.0.0.1', port: guardPort, method: 'CONNECT', path: `127.0.0.5:${port}`, agent: false })
      .on('connect', (res, socket) => (res.statusCode === 200 ? resolve(socket) : reject(new Error(`CONNECT ${res.statusCode}`))))
      .on('error', reject)
      .end();
  });
  const echoOf = (s: string): Promise<string> => new Promise((resolve, reject) => {
    tunnel.once('data', (d: Buffer) => resolve(d.toString('utf8')));
    tunnel.once('error', reject);
    tunnel.once('close', () => reject(new Error('the tunnel was closed')));
    tunnel.write(s);
  });
  t.equal(await echoOf('before'), 'before');
  guard.child.kill('SIGTERM');
  // Past the 5 s the guard used to give its tunnels.
  await new Promise((r) => setTimeout(r, 6_000));
  t.equal(await echoOf('after'), 'after', 'the tunnel still carries a render\'s bytes');
  tunnel.end();
  t.equal(await guard.exited, 0, 'and the guard exits once it is closed');
});
