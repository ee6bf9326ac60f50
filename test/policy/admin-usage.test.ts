/**
 * `tintype policy`'s admin listener as a process: probes and metrics answer every peer, the
 * usage report and the egress audit only the admin socket (docs/operations.md "Reading usage")
 * unless TINTYPE_POLICY_USAGE_OPEN=true; and `tintype keys lease-keypair` makes the key pair policy
 * starts with. A preStop drain there tells kept-alive clients of the other listeners to leave
 * (lib/graceful-close.ts).
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { ADMIN_SOCKET_NAME } from '../../lib/admin.ts';
import { loadConfig } from '../../lib/config.ts';
import { leaseSigner, leaseVerifier } from '../../lib/lease.ts';
import { request } from './http.ts';
import { runTintype, startPolicyProcess } from './process.ts';

/** GET `path` on this host's `port` from `localAddress` (127.0.0.6 is where Istio's sidecar delivers from). */
function getFrom(localAddress: string, port: number, p: string) {
  return new Promise<number>((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: p, localAddress }, (res) => {
      res.resume();
      res.once('end', () => resolve(res.statusCode ?? 0));
    });
    req.once('error', reject);
    req.end();
  });
}

/** GET `path` on the unix socket at `socketPath`. */
function getOnSocket(socketPath: string, p: string) {
  return new Promise<number>((resolve, reject) => {
    const req = http.request({ socketPath, path: p }, (res) => {
      res.resume();
      res.once('end', () => resolve(res.statusCode ?? 0));
    });
    req.once('error', reject);
    req.end();
  });
}

t.test('keys lease-keypair prints a signing key and its public key, as the settings take them', async (t) => {
  const r = await runTintype(['keys', 'lease-keypair'], {});
  t.equal(r.code, 0);
  const env = Object.fromEntries(r.stdout.trim().split('\n').map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
  t.same(Object.keys(env).sort(), ['TINTYPE_LEASE_PUBLIC_KEYS', 'TINTYPE_LEASE_SIGNING_KEY']);
  const config = loadConfig(env);
  const claims = { id: 'AAAAAAAAAAAAAAAAAAAAAA', keyId: 'key_abc', operation: 'pdf' as const, expiresAt: 1_800_000_000_000 };
  t.same(leaseVerifier(config.leasePublicKeys).verify(leaseSigner(config.leaseSigningKey!).sign(claims)), claims, 'the public key verifies what the private key signs');
  t.match(r.stderr, /policy only/);
});

t.test('GET /usage and /egress: on the admin socket; on the admin port not even to a loopback peer (a sidecar mesh delivers every peer from loopback), unless opened', async (t) => {
  for (const open of [false, true]) {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'tintype-admin-usage-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const proc = await startPolicyProcess({ TINTYPE_DATA_DIR: dir, ...(open ? { TINTYPE_POLICY_USAGE_OPEN: 'true' } : {}) });
    t.teardown(() => proc.kill('SIGTERM'));
    const socket = path.join(dir, ADMIN_SOCKET_NAME);
    for (const p of ['/usage?month=2026-08', '/egress?key=key_abc']) {
      t.equal(await getOnSocket(socket, p), 200, `open=${open}: ${p} on the admin socket`);
      t.equal((await request(proc.adminPort, 'GET', p)).status, open ? 200 : 404, `open=${open}: ${p} from 127.0.0.1 on the admin port`);
      t.equal(await getFrom('127.0.0.6', proc.adminPort, p), open ? 200 : 404, `open=${open}: ${p} from 127.0.0.6, a mesh's sidecar`);
    }
    t.equal(statSync(socket).mode & 0o777, 0o600, 'the socket is its owner\'s alone');
    t.equal(await getFrom('127.0.0.6', proc.adminPort, '/healthz/ready'), 200, `open=${open}: readiness answers every peer`);
    t.equal(await getFrom('127.0.0.6', proc.adminPort, '/metrics'), 200, `open=${open}: so do metrics`);
    t.equal(await getOnSocket(socket, '/healthz/ready'), 200, 'and the socket');
    await proc.kill('SIGTERM');
  }
});

t.test("the drain at SIGTERM: the admin port cannot begin it; then the edge's and the renderers' listeners serve on, each answer closing its connection", async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tintype-admin-drain-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const proc = await startPolicyProcess({ TINTYPE_DATA_DIR: dir, TINTYPE_TERM_DRAIN_S: '5' });
  t.teardown(() => proc.kill('SIGTERM'));
  const agent = new http.Agent({ keepAlive: true });
  t.teardown(() => agent.destroy());
  const live = async (port: number) => {
    const r = await request(port, 'GET', '/healthz/live', {}, undefined, agent);
    return { status: r.status, connection: r.headers.connection };
  };
  for (const port of [proc.port, proc.settlePort]) t.same(await live(port), { status: 200, connection: 'keep-alive' });
  t.not((await request(proc.adminPort, 'GET', '/healthz/drain?wait_s=0')).status, 200, 'no request drains policy');
  t.equal((await request(proc.adminPort, 'GET', '/healthz/ready')).status, 200);
  for (const port of [proc.port, proc.settlePort]) t.same(await live(port), { status: 200, connection: 'keep-alive' }, `port ${port}: not told to leave`);
  process.kill(proc.pid, 'SIGTERM');
  while ((await request(proc.adminPort, 'GET', '/healthz/ready')).status === 200);
  for (const port of [proc.port, proc.settlePort]) t.same(await live(port), { status: 200, connection: 'close' }, `port ${port}: served, and told to leave`);
});
