/**
 * `tintype policy`'s admin listener as a process: probes and metrics answer every peer, the
 * usage report only a loopback peer (an operator on the host, `kubectl port-forward`) unless
 * TINTYPE_POLICY_USAGE_OPEN=true; and `tintype keys lease-keypair` makes the key pair policy
 * starts with. A preStop drain there tells kept-alive clients of the other listeners to leave
 * (lib/graceful-close.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { loadConfig } from '../../lib/config.ts';
import { leaseSigner, leaseVerifier } from '../../lib/lease.ts';
import { request } from './http.ts';
import { runTintype, startPolicyProcess } from './process.ts';

/** An address of this host that is not loopback, for a peer the admin listener must not trust. */
const outside = Object.values(os.networkInterfaces()).flat().find((i) => i !== undefined && !i.internal && i.family === 'IPv4')?.address;

/** GET `path` on `host:port` from that host's own address (so the peer is `host`, not loopback). */
function getFrom(host: string, port: number, p: string) {
  return new Promise<number>((resolve, reject) => {
    const req = http.request({ host, port, path: p, localAddress: host }, (res) => {
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

t.test('GET /usage: loopback peers only, unless opened; probes and metrics for every peer', { skip: outside === undefined ? 'this host has no address but loopback' : false }, async (t) => {
  for (const open of [false, true]) {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'tintype-admin-usage-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const proc = await startPolicyProcess({ TINTYPE_DATA_DIR: dir, ...(open ? { TINTYPE_POLICY_USAGE_OPEN: 'true' } : {}) });
    t.teardown(() => proc.kill('SIGTERM'));
    t.equal((await request(proc.adminPort, 'GET', '/usage?month=2026-08')).status, 200, `open=${open}: a loopback peer reads the report`);
    t.equal(await getFrom(outside!, proc.adminPort, '/usage?month=2026-08'), open ? 200 : 404, `open=${open}: a peer from ${outside}`);
    t.equal(await getFrom(outside!, proc.adminPort, '/healthz/ready'), 200, `open=${open}: readiness answers that peer`);
    t.equal(await getFrom(outside!, proc.adminPort, '/metrics'), 200, `open=${open}: so do metrics`);
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
