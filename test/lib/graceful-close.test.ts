// A stopping listener lets no kept-alive connection hold it open (lib/graceful-close.ts): a client
// that keeps sending on its connection gets `connection: close` on the answer in flight and
// moves on; a connection whose answer had its headers out before the stop is ended when the
// answer ends. Both servers keep idle connections for ten minutes, so only the stop can end them.
import t from 'tap';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gracefulClose } from '../../lib/graceful-close.ts';

const LONG_KEEP_ALIVE_MS = 600_000;

async function serve(handler: http.RequestListener): Promise<{ server: http.Server; port: number; stop: ReturnType<typeof gracefulClose> }> {
  const server = http.createServer(handler);
  server.keepAliveTimeout = LONG_KEEP_ALIVE_MS;
  const stop = gracefulClose(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port, stop };
}

function get(agent: http.Agent, port: number, path = '/'): Promise<{ status: number; connection: string | undefined; socket: object }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, agent, path }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection, socket: req.socket! }));
    });
    req.on('error', reject);
  });
}

t.test('a client sending without pause on one connection is told to close it, and the stop ends', async (t) => {
  let answered = 0;
  let stopping: Promise<void> | undefined;
  const { port, stop } = await serve((_req, res) => {
    answered++;
    // The stop begins while the third answer is in flight.
    if (answered === 3) stopping = stop();
    setImmediate(() => res.end('ok'));
  });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  t.teardown(() => agent.destroy());
  const answers = [];
  for (let i = 0; i < 3; i++) answers.push(await get(agent, port));
  t.same(answers.map((a) => a.status), [200, 200, 200]);
  t.same(answers.map((a) => a.connection), ['keep-alive', 'keep-alive', 'close'], 'the answer in flight at the stop says close');
  t.equal(answers[0]!.socket, answers[2]!.socket, 'all three on one kept-alive connection');
  await stopping;
  t.pass('the stop ended with the client still holding its agent');
});

t.test('an answer whose headers were out before the stop ends its connection when it ends', async (t) => {
  let finish!: () => void;
  let headersOut!: () => void;
  const out = new Promise<void>((resolve) => (headersOut = resolve));
  const { port, stop } = await serve((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.write('part');
    headersOut();
    finish = () => res.end('rest');
  });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  t.teardown(() => agent.destroy());
  const answer = get(agent, port);
  await out;
  let stopped = false;
  const stopping = stop().then(() => (stopped = true));
  await new Promise((r) => setImmediate(r));
  t.notOk(stopped, 'the answer in flight holds the stop');
  finish();
  t.equal((await answer).status, 200);
  await stopping;
  t.ok(stopped, 'its connection ended with it, not at the ten-minute keep-alive');
});

t.test('leave(): the server serves on, and every answer from then on closes its connection', async (t) => {
  let leave!: () => void;
  const { server, port, stop } = await serve((req, res) => {
    // The drain begins while the second answer is in flight.
    if (req.url === '/?leave') leave();
    setImmediate(() => res.end('ok'));
  });
  leave = stop.leave;
  t.teardown(() => stop());
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  t.teardown(() => agent.destroy());
  const before = await get(agent, port);
  const during = await get(agent, port, '/?leave');
  const after = await get(agent, port);
  t.same([before, during, after].map((a) => a.status), [200, 200, 200], 'still serving');
  t.same([before, during, after].map((a) => a.connection), ['keep-alive', 'close', 'close'], 'the answer in flight and every later one say close');
  t.equal(before.socket, during.socket, 'the drain found the client on its kept-alive connection');
  t.not(during.socket, after.socket, 'the next request came on a new connection');
  t.ok(server.listening, 'leave() stops nothing');
});
