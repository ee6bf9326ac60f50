/**
 * The relays between Chromium and the guard (docs/architecture.md §2 "guard"): a lane relay forwards only
 * while a render owns the lane, stamps that render's Proxy-Authorization and drops whatever the
 * browser sent under that name; a new owner cuts the old one's connections. The refusing proxy
 * (Chromium's own background traffic) refuses everything and dials nobody.
 */
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import t from 'tap';
import { renderAuthorization } from '../../../lib/guard-contract.ts';
import { startRelays } from '../../../renderer/browser/relay-set.ts';
import { tempDir, until } from './helpers.ts';

/** A stand-in for the guard's socket that records each request head and answers 200 (or opens a tunnel). */
async function recordingUpstream(t: Parameters<typeof tempDir>[0]) {
  const socketPath = path.join(tempDir(t), 'up.sock');
  const heads: string[] = [];
  const open = new Set<net.Socket>();
  const server = net.createServer((s) => {
    open.add(s);
    s.on('close', () => open.delete(s));
    let buffered = '';
    s.on('data', (chunk) => {
      buffered += chunk.toString('latin1');
      const end = buffered.indexOf('\r\n\r\n');
      if (end < 0 || buffered === '') return;
      const head = buffered.slice(0, end);
      buffered = '';
      heads.push(head);
      if (head.startsWith('CONNECT ')) s.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      else s.end('HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok');
    });
  });
  await new Promise<void>((r) => server.listen(socketPath, r));
  t.teardown(() => {
    for (const s of open) s.destroy();
    return new Promise<void>((r) => server.close(() => r()));
  });
  return { socketPath, heads, open };
}

function hostPort(address: string): { host: string; port: number } {
  const i = address.lastIndexOf(':');
  return { host: address.slice(0, i), port: Number(address.slice(i + 1)) };
}

/** Sends a proxy request through `address`; resolves with the status. */
function proxyGet(address: string, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request({ ...hostPort(address), method: 'GET', path: 'http://example.test/x', headers, agent: false });
    req.on('response', (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}

/** Opens a CONNECT tunnel through `address`; resolves with the status line and the socket. */
function proxyConnect(address: string, headers = ''): Promise<{ status: string; socket: net.Socket }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(hostPort(address), () => {
      socket.write(`CONNECT example.test:443 HTTP/1.1\r\nHost: example.test:443\r\n${headers}\r\n`);
    });
    let got = '';
    socket.on('data', (c) => {
      got += c.toString('latin1');
      if (got.includes('\r\n')) resolve({ status: got.split('\r\n')[0]!, socket });
    });
    socket.on('error', reject);
  });
}

t.test('a lane relay forwards only for its render, under that render’s name', async (t) => {
  const up = await recordingUpstream(t);
  const relays = await startRelays({ lanes: 2, dial: () => net.connect({ path: up.socketPath }) });
  t.teardown(() => relays.close());
  const [lane0, lane1] = relays.laneAddresses as [string, string];

  t.equal(await proxyGet(lane0), 403, 'no render owns the lane: refused');
  t.equal(up.heads.length, 0, 'and the guard was not asked');

  const token = 'A'.repeat(24);
  await relays.setToken(0, token);
  t.equal(await proxyGet(lane0, { 'proxy-authorization': renderAuthorization('B'.repeat(24)) }), 200);
  const head = up.heads.at(-1)!;
  t.match(head, /^GET http:\/\/example\.test\/x HTTP\/1\.1/, 'forwarded in absolute form');
  const auth = head.split('\r\n').filter((l) => /^proxy-authorization:/i.test(l));
  t.same(auth, [`Proxy-Authorization: ${renderAuthorization(token)}`], 'the relay’s name only; the browser’s dropped');
  t.equal(await proxyGet(lane1), 403, 'the other lane has no owner yet');

  const tunnel = await proxyConnect(lane0, `Proxy-Authorization: ${renderAuthorization('C'.repeat(24))}\r\n`);
  t.match(tunnel.status, /^HTTP\/1\.1 200/, 'CONNECT goes through');
  const connectHead = up.heads.at(-1)!;
  t.match(connectHead, /^CONNECT example\.test:443 HTTP\/1\.1/);
  t.ok(connectHead.includes(renderAuthorization(token)), 'under the render’s name');
  t.notOk(connectHead.includes(renderAuthorization('C'.repeat(24))), 'not the browser’s');

  const closed = new Promise<void>((r) => tunnel.socket.on('close', () => r()));
  await relays.setToken(0, undefined);
  await closed;
  t.pass('the render ended: its open tunnel was cut');
  await until(() => up.open.size === 0);
  t.pass('and so was the connection to the guard');
  t.equal(await proxyGet(lane0), 403, 'nothing is forwarded between renders');
});

t.test('the refusing proxy refuses everything and dials nobody', async (t) => {
  let dialled = 0;
  const relays = await startRelays({
    lanes: 1,
    dial: () => {
      dialled += 1;
      return net.connect({ path: '/nonexistent' });
    },
  });
  t.teardown(() => relays.close());
  t.equal(await proxyGet(relays.refuseAddress), 403);
  const tunnel = await proxyConnect(relays.refuseAddress);
  t.match(tunnel.status, /^HTTP\/1\.1 403/);
  tunnel.socket.destroy();
  t.equal(dialled, 0);
});

t.test('a lane whose guard cannot be reached answers 502', async (t) => {
  const relays = await startRelays({ lanes: 1, dial: () => net.connect({ path: path.join(tempDir(t), 'absent.sock') }) });
  t.teardown(() => relays.close());
  await relays.setToken(0, 'D'.repeat(24));
  t.equal(await proxyGet(relays.laneAddresses[0]!), 502);
  const tunnel = await proxyConnect(relays.laneAddresses[0]!);
  t.match(tunnel.status, /^HTTP\/1\.1 502/);
  tunnel.socket.destroy();
});

/**
 * Opens a connection to `address`, writes `head` and more than a socket buffer holds, and resets
 * it while the relay is answering: what a browser does to a render's connections when the render
 * is torn down. Resolves once the reset went out.
 */
function resetMidway(address: string, head: string, afterMs: number): Promise<void> {
  return new Promise((resolve) => {
    const socket = net.connect(hostPort(address), () => {
      socket.write(head + 'x'.repeat(256 * 1024));
      setTimeout(() => {
        socket.resetAndDestroy();
        resolve();
      }, afterMs);
    });
    socket.on('error', () => resolve());
  });
}

t.test('connections reset while the relays refuse or carry them end there, not the process', async (t) => {
  // The guard's side drops them too: every connection the relay opens is closed as it speaks.
  const socketPath = path.join(tempDir(t), 'dropping.sock');
  const resetting = net.createServer((s) => s.once('data', () => s.destroy()));
  await new Promise<void>((r) => resetting.listen(socketPath, r));
  t.teardown(() => new Promise<void>((r) => resetting.close(() => r())));
  const relays = await startRelays({ lanes: 2, dial: () => net.connect({ path: socketPath }) });
  t.teardown(() => relays.close());
  const [owned, idle] = relays.laneAddresses as [string, string];
  await relays.setToken(0, 'E'.repeat(24));

  const heads = [
    'CONNECT example.test:443 HTTP/1.1\r\nHost: example.test:443\r\n\r\n',
    'GET http://example.test/ws HTTP/1.1\r\nHost: example.test\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n',
    'POST http://example.test/x HTTP/1.1\r\nHost: example.test\r\nContent-Length: 262144\r\n\r\n',
  ];
  const resets: Promise<void>[] = [];
  for (const address of [relays.refuseAddress, owned, idle]) {
    for (const head of heads) {
      for (const afterMs of [0, 1, 5, 20]) {
        for (let i = 0; i < 5; i += 1) resets.push(resetMidway(address, head, afterMs));
      }
    }
  }
  await Promise.all(resets);
  // The refusals are still being written as the resets land; give them a moment to meet.
  await new Promise((r) => setTimeout(r, 200));
  t.equal(await proxyGet(relays.refuseAddress), 403, 'the refusing proxy still answers');
  t.equal(await proxyGet(idle), 403, 'a lane with no render still refuses');
  t.equal(await proxyGet(owned), 502, 'a lane whose guard drops it answers 502');
});

t.test('a lane holds at most its bound of tunnels the guard opened; the next CONNECT is 503 and reaches nobody; a closed one frees its place', async (t) => {
  const up = await recordingUpstream(t);
  const relays = await startRelays({ lanes: 1, dial: () => net.connect({ path: up.socketPath }), maxOpenPerLane: 3 });
  t.teardown(() => relays.close());
  const [lane] = relays.laneAddresses as [string];
  await relays.setToken(0, 'R'.repeat(24));
  const opened: net.Socket[] = [];
  t.teardown(() => opened.forEach((s) => s.destroy()));
  const statuses: string[] = [];
  for (let i = 0; i < 5; i += 1) {
    const { status, socket } = await proxyConnect(lane);
    opened.push(socket);
    statuses.push(status);
  }
  t.same(statuses.map((s) => s.split(' ')[1]), ['200', '200', '200', '503', '503']);
  t.equal(up.heads.filter((h) => h.startsWith('CONNECT ')).length, 3, 'the guard saw the three it opened only');
  opened[0]!.destroy();
  await until(() => up.open.size === 2);
  t.equal((await proxyConnect(lane)).status.split(' ')[1], '200', 'a place freed is taken again');
  t.equal(await proxyGet(lane), 200, 'requests are not held to the bound');
});
