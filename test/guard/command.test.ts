/**
 * `tintype guard` as a process (docs/architecture.md §1): the proxy on PORT and GUARD_SOCKET at once, the
 * admin port with refusals by reason and both probes, a clean stop on SIGTERM, and a bad
 * setting named in the message it stops with.
 *
 * GUARD_ALLOW_CIDRS: the process is started with 127.0.0.5/32 open so the test's own target
 * server on that loopback address can stand in for a public host.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { GUARD_REASON_HEADER, refusedRequestName, renderAuthorization, renderStatsPath } from '../../lib/guard-contract.ts';
import { closeServer, listenOn, startCanary, startGuardProcess as startGuard, viaGuard } from './helpers.ts';
import { spawnTintype } from '../tintype.ts';
import { TEST_LEASE_ENV, testGuardTokens } from '../lib/leases.ts';
import { LIVE_PATH, METRICS_PATH, READY_PATH } from '../../lib/admin.ts';

function get(port: number, p: string, host = '127.0.0.1'): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    http
      .get({ host, port, path: p, agent: false }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      })
      .on('error', reject);
  });
}

t.test('tintype guard listens on PORT and GUARD_SOCKET, reports on its admin port, stops on SIGTERM', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tintype-guard-cmd-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const target = http.createServer((req, res) => res.end(`target ${req.url}`));
  const targetPort = await listenOn(target, '127.0.0.5');
  t.teardown(() => closeServer(target));
  const canary = await startCanary('127.0.0.2');
  t.teardown(() => canary.close());
  const socket = path.join(dir, 'guard.sock');

  const g = await startGuard({ PORT: '0', TINTYPE_ADMIN_PORT: '0', GUARD_SOCKET: socket, GUARD_ALLOW_CIDRS: '127.0.0.5/32' });
  t.teardown(() => g.child.kill('SIGKILL'));

  t.equal((await get(g.adminPort, LIVE_PATH)).status, 200);
  t.equal((await get(g.adminPort, READY_PATH)).status, 200);

  const overTcp = await viaGuard({ port: g.port }, `http://127.0.0.2:${canary.port}/`);
  t.equal(overTcp.status, 403);
  t.equal(overTcp.headers[GUARD_REASON_HEADER], 'private_address');
  // Both ports take IPv6 clients too (an IPv6-only or dual-stack cluster).
  t.equal((await get(g.adminPort, LIVE_PATH, '::1')).status, 200, 'the admin port over IPv6');
  const overIpv6 = await viaGuard({ port: g.port, host: '::1' }, `http://127.0.0.2:${canary.port}/`);
  t.equal(overIpv6.headers[GUARD_REASON_HEADER], 'private_address', 'the proxy over IPv6');
  const overSocket = await viaGuard({ socket }, 'http://localhost/');
  t.equal(overSocket.headers[GUARD_REASON_HEADER], 'bad_host', 'the socket listener judges the same way');
  const allowed = await viaGuard({ socket }, `http://127.0.0.5:${targetPort}/hi`);
  t.equal(allowed.status, 200);
  t.equal(allowed.body, 'target /hi');

  // A render's refusals, read back over the socket the way the renderer reads them.
  const token = testGuardTokens.mint();
  const named = await viaGuard({ socket }, `http://[::1]:${canary.port}/`, { headers: { 'proxy-authorization': renderAuthorization(token) } });
  t.equal(named.headers[GUARD_REASON_HEADER], 'private_address');
  const tally = await viaGuard({ socket }, renderStatsPath(token));
  t.same(JSON.parse(tally.body), {
    blocked: 1,
    firstReason: 'private_address',
    refused: [{ request: refusedRequestName('GET', `http://[::1]:${canary.port}/`), reason: 'private_address' }],
  });

  const metrics = await get(g.adminPort, METRICS_PATH);
  t.match(metrics.body, /tintype_guard_refusals_total\{reason="private_address"\} 3\n/);
  t.match(metrics.body, /tintype_guard_refusals_total\{reason="bad_host"\} 1\n/);
  t.match(metrics.body, /tintype_guard_refusals_total\{reason="denied_host"\} 0\n/, 'every reason is exposed from the start');
  t.match(metrics.body, /tintype_guard_decisions_total\{decision="allowed",kind="http"\} 1\n/);
  t.notMatch(metrics.body, /127\.0\.0|localhost/, 'no address or host in any label');
  t.equal(canary.accepted(), 0);

  g.child.kill('SIGTERM');
  t.equal(await g.exited, 0, 'exits 0 on SIGTERM');
  t.ok(g.lines.some((l) => l.event === 'stopped' && l.signal === 'SIGTERM'));
  t.notOk(existsSync(socket), 'the socket is removed');
});

t.test('a bad setting stops tintype guard with the name of the variable', async (t) => {
  const g = spawnTintype('guard', { PORT: '0', TINTYPE_ADMIN_PORT: '0', GUARD_TOKEN_KEY: TEST_LEASE_ENV.GUARD_TOKEN_KEY, GUARD_ALLOW_CIDRS: '10.0.0.0/8,not-a-range' });
  t.not(await g.exited, 0);
  t.match(JSON.stringify(g.lines), /GUARD_ALLOW_CIDRS/);
});
