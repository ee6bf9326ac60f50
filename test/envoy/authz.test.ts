/**
 * The edge's ext_authz client (envoy/edge/authz.ts) against a policy on a real socket: an answer
 * that arrived by the timeout is taken, even when a busy event loop reads it after its timer;
 * no answer by then is a check given up, its connection closed so policy can withdraw a grant.
 */
import t from 'tap';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { AuthzUnavailable, createAuthzClient } from '../../envoy/edge/authz.ts';

const TIMEOUT_MS = 500;
const GRANT = { 'x-tintype-lease': 'lease-1', 'x-tintype-key': 'key-1', 'x-ratelimit-limit': '60', 'x-ratelimit-remaining': '59' };

/** Blocks this process's event loop, as a busy edge's is blocked, for `ms`. */
function busy(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // spinning: no timer, no socket is served meanwhile
  }
}

/** A policy that answers each check as `answer` says; resolves with its URL and a count of closed connections. */
async function policy(t: { teardown(fn: () => unknown): void }, answer: (res: http.ServerResponse) => void): Promise<{ url: string; closed: () => number }> {
  let closed = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    req.socket.once('close', () => (closed += 1));
    answer(res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => {
    server.closeAllConnections();
    return new Promise<void>((r) => server.close(() => r()));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, closed: () => closed };
}

t.test('a grant sent before the timeout is taken, though the loop reads it after the timer', async (t) => {
  // The grant goes out at once; then the loop is held past the timeout, so the timer is due
  // before the grant is read (the same process holds both ends, as in `tintype start`).
  const p = await policy(t, (res) => {
    res.writeHead(200, GRANT);
    res.end();
    busy(TIMEOUT_MS * 2);
  });
  const client = createAuthzClient(p.url, TIMEOUT_MS);
  t.teardown(() => client.close());
  const d = await client.check('GET', '/v1/ping', { authorization: 'Bearer sk_x' }, {});
  t.equal(d.allowed, true, 'granted');
  t.same(d.allowed && d.upstream, { 'x-tintype-lease': 'lease-1', 'x-tintype-key': 'key-1' }, 'with its lease');
});

t.test('no answer by the timeout: given up, and the connection closed for policy to see', async (t) => {
  const p = await policy(t, () => undefined);
  const client = createAuthzClient(p.url, TIMEOUT_MS);
  t.teardown(() => client.close());
  await t.rejects(client.check('GET', '/v1/ping', { authorization: 'Bearer sk_x' }, {}), AuthzUnavailable);
  while (p.closed() === 0) await new Promise((r) => setTimeout(r, 10));
  t.equal(p.closed(), 1, 'policy saw its requester go');
});
