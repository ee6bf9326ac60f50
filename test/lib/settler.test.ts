/** lib/policy-contract.ts agentSettler: the settle request of docs/architecture.md §2 on a real socket. */
import t from 'tap';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { agentSettler, SETTLE_PATH } from '../../lib/policy-contract.ts';

interface Seen { method: string; url: string; type: string | undefined; body: string }

async function policyStub(status: number): Promise<{ url: string; seen: Seen[]; close(): Promise<void> }> {
  const seen: Seen[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', type: req.headers['content-type'], body });
      res.writeHead(status).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: () => new Promise((r) => {
      server.closeAllConnections();
      server.close(() => r());
    }),
  };
}

t.test('posts the outcome as JSON to the settle path; 204 settles', async (t) => {
  const stub = await policyStub(204);
  const settler = agentSettler(stub.url);
  t.teardown(async () => {
    settler.close();
    await stub.close();
  });
  const outcomes = [
    { lease: 'l1', status: 200, cache: 'hit' as const },
    { lease: 'l2', status: 504, error: 'render_timeout' },
    { lease: 'l3', status: 499 },
  ];
  for (const o of outcomes) await settler.settle(o);
  t.same(stub.seen.map((s) => [s.method, s.url, s.type]), outcomes.map(() => ['POST', SETTLE_PATH, 'application/json']));
  t.same(stub.seen.map((s) => JSON.parse(s.body)), outcomes, 'each outcome as sent');
});

t.test('any other answer is an error the caller logs', async (t) => {
  for (const status of [400, 404, 503]) {
    const stub = await policyStub(status);
    const settler = agentSettler(stub.url);
    await t.rejects(settler.settle({ lease: 'x', status: 200 }), new RegExp(`settle answered ${status}`), `${status}`);
    settler.close();
    await stub.close();
  }
});

t.test('policy unreachable: rejects', async (t) => {
  const stub = await policyStub(204);
  const url = stub.url;
  await stub.close();
  const settler = agentSettler(url);
  await t.rejects(settler.settle({ lease: 'x', status: 200 }));
  settler.close();
});

t.test('an idle kept-alive socket is closed by the settler, not by policy', async (t) => {
  // Policy keeps connections for 120 s (policy/server.ts); the settler must let go first.
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(204).end());
  });
  server.keepAliveTimeout = 600_000;
  const ended: Promise<void>[] = [];
  server.on('connection', (socket) => ended.push(new Promise((r) => socket.once('end', () => r()))));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const settler = agentSettler(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, { idleMs: 100 });
  t.teardown(() => {
    settler.close();
    server.closeAllConnections();
    server.close();
  });
  await settler.settle({ lease: 'l1', status: 200 });
  t.equal(ended.length, 1, 'one connection');
  await ended[0];
  t.pass('the settler ended the idle connection (the server would have kept it 600 s)');
});

t.test('a kept-alive connection to a policy that went silent: the attempt times out, and the next goes on a fresh connection', async (t) => {
  // A pod that has gone answers nothing on the connections that led to it; the Service's name
  // now leads elsewhere. Here: connections opened before `silent` get no answer, later ones do.
  let silent = false;
  const early = new Set<unknown>();
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (silent && early.has(req.socket)) return;
      setTimeout(() => res.writeHead(204).end(), 50);
    });
  });
  server.keepAliveTimeout = 600_000;
  server.on('connection', (socket) => {
    if (!silent) early.add(socket);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const settler = agentSettler(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, { timeoutMs: 300 });
  t.teardown(() => {
    settler.close();
    server.closeAllConnections();
    server.close();
  });
  // Two settles at once: two kept-alive connections, both free afterwards.
  await Promise.all([settler.settle({ lease: 'a', status: 200 }), settler.settle({ lease: 'b', status: 200 })]);
  t.equal(early.size, 2, 'two kept-alive connections');
  silent = true;
  await t.rejects(settler.settle({ lease: 'c', status: 200 }), /timed out/, 'the attempt on a silent connection gives up');
  await settler.settle({ lease: 'c', status: 200 });
  t.pass('the retry reached policy on a new connection, not on the other silent one');
});
