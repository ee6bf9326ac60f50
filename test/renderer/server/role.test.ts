/**
 * createRendererRole (renderer/role.ts) with the options `tintype start` embeds it with:
 * it listens on the host it is given (loopback, so only the edge may reach it), starts its own guard on a private socket even when GUARD_URL
 * names one, and settles to TINTYPE_POLICY_URL over kept-alive HTTP, retrying a failed attempt. A preStop drain on
 * its admin port tells kept-alive clients to leave (lib/graceful-close.ts).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { createRendererRole } from '../../../renderer/role.ts';
import { loadConfig } from '../../../lib/config.ts';
import { createLogger } from '../../../lib/log.ts';
import { CLAIM_PATH, LEASE_HEADER, SETTLE_PATH, type SettleRequest } from '../../../lib/policy-contract.ts';
import { request } from '../../policy/http.ts';
import { TEST_LEASE_ENV, TEST_RENDERER_AUTH } from '../../lib/leases.ts';
import { SITE_HOST, newLease, pngSize, post, startSite, until } from './harness.ts';
import { CACHE_HEADER } from '../../../renderer/server/answer-headers.ts';
import { STATE_PATH } from '../../../lib/state-contract.ts';

const dir = await mkdtemp(path.join(os.tmpdir(), 'tintype-role-'));
t.teardown(() => rm(dir, { recursive: true, force: true }));

// A stand-in for policy's renderer listener (claims taken, settles recorded): the first attempt fails, as a policy restarting would.
const settles: SettleRequest[] = [];
let attempts = 0;
/** The connections settles came on (the egress audit posts come on their own). */
const settleConnections = new Set<unknown>();
/** The `authorization` of every call, as policy checks it for the renderer token (lib/renderer-token.ts). */
const authorizations: Array<string | undefined> = [];
const policy = http.createServer((req, res) => {
  authorizations.push(req.headers.authorization);
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    if (req.method === 'POST' && req.url === CLAIM_PATH) return res.writeHead(204).end();
    if (req.method !== 'POST' || req.url !== SETTLE_PATH) return res.writeHead(404).end();
    attempts += 1;
    settleConnections.add(req.socket);
    if (attempts === 1) return res.writeHead(500).end();
    settles.push(JSON.parse(Buffer.concat(chunks).toString('utf8')));
    res.writeHead(204).end();
  });
});
await new Promise<void>((r) => policy.listen(0, '127.0.0.1', r));
t.teardown(() => new Promise<void>((r) => policy.close(() => r())));

const site = await startSite((_req, res) => {
  res.writeHead(200, { 'content-type': 'text/html' });
  res.end('<!doctype html><p>role</p>');
});
t.teardown(() => site.close());

const config = loadConfig({
  PORT: '0',
  TINTYPE_ADMIN_PORT: '0',
  TINTYPE_DATA_DIR: dir,
  TINTYPE_LOG_LEVEL: 'error',
  GUARD_ALLOW_CIDRS: `${SITE_HOST}/32`,
  ...TEST_LEASE_ENV,
  // Nothing listens here: a render can only work through the role's own guard.
  GUARD_URL: 'http://127.0.0.1:9',
  TINTYPE_POLICY_URL: `http://127.0.0.1:${(policy.address() as AddressInfo).port}`,
});
const role = await createRendererRole(config, createLogger('role-test', { level: 'error' }), { host: '127.0.0.1', ownGuard: true });
await role.start();
t.teardown(() => role.stop());
await until(() => role.ready(), 'the self-test to pass', 60_000);

t.test('listens on the host it is given, the public and the admin port alike', async (t) => {
  t.equal(role.server.address().address, '127.0.0.1');
  t.equal(role.server.adminAddress().address, '127.0.0.1');
  t.ok(role.healthy());
  t.ok(role.ready(), 'ready once the self-test passed');
});

t.test('renders through its own guard and settles to policy, retrying a failed attempt', async (t) => {
  const h = { base: `http://127.0.0.1:${role.server.address().port}` };
  const lease = newLease('screenshot');
  const a = await post(h, 'screenshot', { url: `${site.origin}/`, width: 32, height: 24 }, { lease });
  t.equal(a.status, 200, 'rendered although GUARD_URL names nothing');
  t.same(pngSize(a.body), { width: 32, height: 24 });
  await until(() => settles.length === 1, 'the settle', 10_000);
  t.equal(attempts, 2, 'the failed attempt was retried');
  t.same(settles[0], { lease, status: 200, cache: 'miss' });

  const second = newLease('screenshot');
  const b = await post(h, 'screenshot', { url: `${site.origin}/`, width: 32, height: 24 }, { lease: second });
  t.equal(b.status, 200);
  t.equal(b.headers.get(CACHE_HEADER), 'hit');
  await until(() => settles.length === 2, 'the second settle', 10_000);
  t.same(settles[1], { lease: second, status: 200, cache: 'hit' });
  t.equal(settleConnections.size, 1, 'the settles shared one kept-alive connection');
  t.ok(authorizations.length >= 5, 'claims and settles seen');
  t.ok(authorizations.every((a) => a === TEST_RENDERER_AUTH.authorization), 'each call carries the renderer token');
});

t.test('a drain (at SIGTERM): the public port serves on, each answer closing its connection', async (t) => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  t.teardown(() => agent.destroy());
  const ping = async () => {
    const r = await request(role.server.address().port, 'GET', '/v1/ping', { [LEASE_HEADER]: newLease('ping') }, undefined, agent);
    return { status: r.status, connection: r.headers.connection };
  };
  t.same(await ping(), { status: 200, connection: 'keep-alive' });
  role.server.drain();
  t.match(JSON.parse((await request(role.server.adminAddress().port, 'GET', STATE_PATH)).body), { draining: true }, 'the operator stops counting its slots');
  t.same(await ping(), { status: 200, connection: 'close' }, 'served, and the edge is told to take its connection elsewhere');
});

t.test('stop() stops every part', async (t) => {
  const base = `http://127.0.0.1:${role.server.address().port}`;
  await role.stop();
  t.notOk(role.healthy());
  t.notOk(role.ready());
  t.notOk(role.server.healthy(), 'the server is closed');
  await t.rejects(fetch(`${base}/v1/ping`), 'no longer listening');
});
