/**
 * Policy's two listeners against a peer that holds what it can (docs/security.md "The meter's
 * walls"), through a real `tintype policy`: the renderer listener takes claims, releases and
 * settles only with the renderer token, refused on the headers before any body byte is read;
 * both listeners cap connections in all and per peer; headers and bodies get seconds, not minutes.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { CLAIM_PATH, SETTLE_PATH } from '../../lib/policy-contract.ts';
import { TEST_RENDERER_AUTH, signedLease } from '../lib/leases.ts';
import { request } from './http.ts';
import { type PolicyProcess, startPolicyProcess } from './process.ts';

/** Generous: what these bounds replace is minutes (125 s for headers, 300 s for a request). */
const WITHIN_MS = 40_000;

interface Exchange {
  /** What came back, as text. */
  answer: string;
  /** Whether policy closed the connection within the wait. */
  closed: boolean;
}

/** Opens a connection from `localAddress`, writes `text`, and collects what comes back until policy closes it or `waitMs` passes. */
function exchange(port: number, text: string, waitMs = WITHIN_MS, localAddress = '127.0.0.1'): Promise<Exchange> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port, localAddress });
    let answer = '';
    const done = (closed: boolean): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ answer, closed });
    };
    const timer = setTimeout(() => done(false), waitMs);
    socket.on('data', (c: Buffer) => (answer += c.toString('latin1')));
    socket.on('error', () => {});
    socket.on('close', () => done(true));
    socket.on('connect', () => socket.write(text));
  });
}

/** Opens `n` idle connections from `localAddress`; resolves once each is accepted or refused. */
async function hold(port: number, n: number, localAddress: string): Promise<net.Socket[]> {
  return Promise.all(Array.from({ length: n }, () => new Promise<net.Socket>((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port, localAddress });
    s.on('error', () => {});
    s.once('connect', () => resolve(s));
    s.once('close', () => resolve(s));
  })));
}

/** Whether a GET of the liveness probe from `localAddress` on a fresh connection is answered 200. */
async function served(port: number, localAddress: string): Promise<boolean> {
  const r = await exchange(port, 'GET /healthz/live HTTP/1.1\r\nhost: policy\r\nconnection: close\r\n\r\n', WITHIN_MS, localAddress);
  return r.answer.startsWith('HTTP/1.1 200');
}

async function policy(t: Test, env: Record<string, string> = {}): Promise<PolicyProcess> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tintype-listeners-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const proc = await startPolicyProcess({ TINTYPE_DATA_DIR: dir, ...env });
  t.teardown(() => proc.kill('SIGTERM'));
  return proc;
}

t.test('the renderer listener refuses a call without the renderer token on its headers, before its body, and closes the connection', async (t) => {
  const proc = await policy(t);
  const head = (auth: string) => `POST ${CLAIM_PATH} HTTP/1.1\r\nhost: policy\r\ncontent-type: application/json\r\n${auth}content-length: 9000\r\n\r\n`;
  // Headers only: the 9,000 bytes announced never come.
  for (const [name, auth] of [['no token', ''], ['a wrong token', 'authorization: Bearer ' + 'x'.repeat(43) + '\r\n']] as const) {
    const r = await exchange(proc.settlePort, head(auth));
    t.match(r.answer, /^HTTP\/1\.1 401 /, `${name}: 401 with the body unsent`);
    t.match(r.answer, /"error":"unauthorized"/);
    t.ok(r.closed, `${name}: the connection is closed, not kept for the body`);
  }
  // The renderer's token: the call is policy's to judge (a lease it never granted is 410).
  t.equal((await request(proc.settlePort, 'POST', CLAIM_PATH, { ...TEST_RENDERER_AUTH }, JSON.stringify({ lease: signedLease('ping') }))).status, 410, 'with the token, the claim is judged');
  t.equal((await request(proc.settlePort, 'POST', SETTLE_PATH, {}, JSON.stringify({ lease: signedLease('ping'), status: 200 }))).status, 401, 'a settle without it: 401');
  const metrics = await request(proc.adminPort, 'GET', '/metrics');
  t.match(metrics.body, /^tintype_policy_refused_total\{reason="no_renderer_token"\} 3$/m, 'counted');
});

t.test('policy does not start without a renderer token', async (t) => {
  const started = await startPolicyProcess({ TINTYPE_DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'tintype-listeners-')), TINTYPE_RENDERER_TOKEN: '' })
    .then(async (p) => {
      await p.kill('SIGTERM');
      return '';
    }, (err: Error) => err.message);
  t.match(started, /TINTYPE_RENDERER_TOKEN must be set on policy/, 'it says which setting is missing');
});

t.test('both listeners cap connections: a quarter of the cap per peer, the cap in all', async (t) => {
  const proc = await policy(t, { TINTYPE_POLICY_MAX_CONNECTIONS: '40' });
  for (const port of [proc.port, proc.settlePort]) {
    const mine = await hold(port, 10, '127.0.0.1');
    t.notOk(await served(port, '127.0.0.1'), `port ${port}: the 11th connection of one peer is closed unanswered`);
    t.ok(await served(port, '127.0.0.2'), `port ${port}: another peer is served`);
    const others = (await Promise.all(['127.0.0.2', '127.0.0.3', '127.0.0.4'].map((a) => hold(port, 10, a)))).flat();
    t.notOk(await served(port, '127.0.0.5'), `port ${port}: past 40 in all, a new peer's connection is closed too`);
    for (const s of [...mine, ...others]) s.destroy();
    // Closed connections give their room back.
    let back = false;
    for (let i = 0; i < 100 && !back; i++) back = await served(port, '127.0.0.1');
    t.ok(back, `port ${port}: served again once the held connections closed`);
  }
  const metrics = await request(proc.adminPort, 'GET', '/metrics');
  t.match(metrics.body, /^tintype_policy_refused_total\{reason="peer_connections"\} [1-9]/m);
  t.match(metrics.body, /^tintype_policy_refused_total\{reason="connections"\} [1-9]/m);
});

t.test('headers and bodies get seconds: a peer that trickles either is answered 408 and closed', async (t) => {
  const proc = await policy(t);
  const [edgeHeaders, rendererHeaders, body] = await Promise.all([
    exchange(proc.port, 'GET /authz/v1/ping HTTP/1.1\r\nhost: policy\r\n'),
    exchange(proc.settlePort, `POST ${CLAIM_PATH} HTTP/1.1\r\nhost: policy\r\n`),
    exchange(proc.settlePort, `POST ${CLAIM_PATH} HTTP/1.1\r\nhost: policy\r\nauthorization: ${TEST_RENDERER_AUTH.authorization}\r\ncontent-length: 100\r\n\r\n{"lease":`),
  ]);
  for (const [name, r] of [['headers on the edge\'s listener', edgeHeaders], ['headers on the renderers\' listener', rendererHeaders], ['a body', body]] as const) {
    t.ok(r.closed, `${name}: closed within ${WITHIN_MS / 1000} s`);
    t.match(r.answer, /^(HTTP\/1\.1 408 |$)/, `${name}: 408 when anything is answered`);
  }  // A kept-alive connection idle past those bounds is timed by the keep-alive (120 s) instead:
  // the edge's and the renderers' pools send their next call on it.
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  t.teardown(() => agent.destroy());
  let connections = 0;
  const connect = agent.createConnection.bind(agent);
  agent.createConnection = (...args: Parameters<typeof connect>) => {
    connections += 1;
    return connect(...args);
  };
  for (const port of [proc.port, proc.settlePort]) {
    const first = await request(port, 'POST', CLAIM_PATH, { ...TEST_RENDERER_AUTH }, JSON.stringify({ lease: signedLease('ping') }), agent);
    await new Promise((resolve) => setTimeout(resolve, 11_000));
    const second = await request(port, 'POST', CLAIM_PATH, { ...TEST_RENDERER_AUTH }, JSON.stringify({ lease: signedLease('ping') }), agent);
    t.equal(second.status, first.status, `port ${port}: a call after 11 s idle on the same connection is answered`);
    t.equal(second.headers.connection, 'keep-alive');
  }
  t.equal(connections, 2, 'one connection a port, kept through the idle time');
});
