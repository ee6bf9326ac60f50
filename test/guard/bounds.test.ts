/**
 * What one render, a peer without a token, or a stranger can hold of a `tintype guard` process
 * (docs/security.md "The guard", "Capacity" and "Tokens"): tunnels per render, for unnamed peers
 * and in all, a capacity refusal recorded in the render's tally as `busy`; render tokens only a
 * holder of GUARD_TOKEN_KEY can make, so made-up ones never push out a render's record; connection
 * caps per peer and request timeouts of seconds on its port.
 *
 * GUARD_ALLOW_CIDRS opens 127.0.0.5/32, where the test's target listens as a public host would.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import t, { type Test } from 'tap';
import { renderAuthorization, renderStatsPath } from '../../lib/guard-contract.ts';
import { testGuardTokens } from '../lib/leases.ts';
import { closeServer, connectVia, eventually, listenOn, startGuardProcess, viaGuard } from './helpers.ts';

const TARGET_HOST = '127.0.0.5';
const as = (token: string): Record<string, string> => ({ 'proxy-authorization': renderAuthorization(token) });
/** A token of the right form that no holder of the key made. */
const madeUp = (): string => randomBytes(36).toString('base64url');

/** A target that holds every connection open and echoes what it is sent. */
async function holdingTarget(t: Test): Promise<number> {
  const held = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    held.add(socket);
    socket.on('close', () => held.delete(socket));
    socket.on('error', () => {});
    socket.pipe(socket);
  });
  const port = await listenOn(server, TARGET_HOST);
  t.teardown(() => {
    for (const s of held) s.destroy();
    return closeServer(server);
  });
  return port;
}

async function guardProcess(t: Test, env: Record<string, string>) {
  const g = await startGuardProcess({ PORT: '0', TINTYPE_ADMIN_PORT: '0', GUARD_ALLOW_CIDRS: `${TARGET_HOST}/32`, ...env });
  t.teardown(() => g.child.kill('SIGKILL'));
  return g;
}

/** Opens `n` tunnels one after the other; answers the statuses and keeps the open ones open. */
async function tunnels(t: Test, port: number, authority: string, n: number, headers: Record<string, string> = {}): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < n; i += 1) {
    const r = await connectVia(port, authority, headers);
    if (r.socket !== undefined) {
      r.socket.on('error', () => {});
      t.teardown(() => r.socket!.destroy());
    }
    statuses.push(r.status);
  }
  return statuses;
}

const count = (statuses: number[], status: number): number => statuses.filter((s) => s === status).length;

t.test('tunnels are bounded per render, for peers naming no render, and in all; a render refused for the guard being full reads busy in its tally', async (t) => {
  const targetPort = await holdingTarget(t);
  const g = await guardProcess(t, { GUARD_MAX_TUNNELS: '12', GUARD_MAX_TUNNELS_PER_RENDER: '4', GUARD_MAX_UNNAMED_TUNNELS: '2' });
  const target = `${TARGET_HOST}:${targetPort}`;
  const [a, b, c] = [testGuardTokens.mint(), testGuardTokens.mint(), testGuardTokens.mint()];

  const greedy = await tunnels(t, g.port, target, 10, as(a));
  t.same([count(greedy, 200), count(greedy, 503)], [4, 6], 'a render that opens 10 holds 4: the rest are refused');

  const stranger = await tunnels(t, g.port, target, 6);
  t.same([count(stranger, 200), count(stranger, 503)], [2, 4], 'a peer naming no render holds the unnamed bound');
  const forged = await tunnels(t, g.port, target, 2, as(madeUp()));
  t.same(forged, [503, 503], 'a made-up token is no render: it counts with the unnamed, whose bound is held');

  t.same(await tunnels(t, g.port, target, 4, as(b)), [200, 200, 200, 200], 'another render still gets its own bound');

  // 4 + 2 + 4 open of 12: the next render gets 2, then the guard is full.
  const late = await tunnels(t, g.port, target, 4, as(c));
  t.same(late, [200, 200, 503, 503], 'the guard full refuses the rest');
  const tally = JSON.parse((await viaGuard({ port: g.port }, renderStatsPath(c))).body);
  t.equal(tally.busy, 2, "the capacity refusals are in the render's tally, as busy");
  t.equal(tally.blocked, 0, 'and not as refusals of the page (x-render-blocked)');
  const own = JSON.parse((await viaGuard({ port: g.port }, renderStatsPath(a))).body);
  t.equal(own.busy, undefined, "a render over its own bound is not the guard's capacity: no busy");
});

t.test('10,050 refusals under made-up tokens leave a live render its tally', async (t) => {
  const g = await guardProcess(t, {});
  const token = testGuardTokens.mint();
  t.equal((await viaGuard({ port: g.port }, 'ftp://refused.test/', { headers: as(token) })).status, 403);

  const agent = new http.Agent({ keepAlive: true, maxSockets: 32 });
  t.teardown(() => agent.destroy());
  const refuse = (forged: string): Promise<number> =>
    new Promise((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port: g.port, path: 'ftp://flood.test/', headers: as(forged), agent }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', reject);
      req.end();
    });
  const forged: string[] = [];
  for (let round = 0; round < 10_050 / 150; round += 1) {
    const batch = Array.from({ length: 150 }, madeUp);
    forged.push(...batch);
    const statuses = await Promise.all(batch.map(refuse));
    if (statuses.some((s) => s !== 403)) t.fail(`a flood request answered ${statuses.find((s) => s !== 403)}`);
  }

  const tally = JSON.parse((await viaGuard({ port: g.port }, renderStatsPath(token))).body);
  t.equal(tally.blocked, 1, "the render's refusal is still counted");
  t.equal(tally.firstReason, 'bad_scheme');
  const none = JSON.parse((await viaGuard({ port: g.port }, renderStatsPath(forged[0]!))).body);
  t.equal(none.blocked, 0, 'nothing was kept under a made-up token');
});

t.test('connections are capped per peer address: the 9th from one address is closed at once, another address is served', async (t) => {
  const g = await guardProcess(t, { GUARD_MAX_CONNECTIONS_PER_PEER: '8' });
  let closed = 0;
  const sockets: net.Socket[] = [];
  for (let i = 0; i < 12; i += 1) {
    const s = net.connect({ host: '127.0.0.1', port: g.port });
    s.on('error', () => {});
    s.on('close', () => (closed += 1));
    sockets.push(s);
  }
  t.teardown(() => sockets.forEach((s) => s.destroy()));
  t.ok(await eventually(() => closed >= 4), `the connections past 8 are closed (${closed})`);
  t.equal(closed, 4, 'and only those');
  const other = await new Promise<string>((resolve, reject) => {
    const s = net.connect({ host: '127.0.0.1', port: g.port, localAddress: '127.0.0.9' });
    let out = '';
    s.setEncoding('latin1');
    s.on('data', (c: string) => (out += c));
    s.on('close', () => resolve(out));
    s.on('error', reject);
    s.write('GET ftp://other.test/ HTTP/1.1\r\nHost: other.test\r\nConnection: close\r\n\r\n');
  });
  t.match(other, /^HTTP\/1\.1 403 /, 'a peer at another address is answered');
});

t.test('a request head or body that does not arrive in time is dropped; an open tunnel is not', async (t) => {
  const targetPort = await holdingTarget(t);
  const g = await guardProcess(t, { GUARD_HEADERS_TIMEOUT_MS: '1000', GUARD_REQUEST_TIMEOUT_MS: '2000' });
  const stalled = (bytes: string): { closed: () => boolean } => {
    let done = false;
    const s = net.connect({ host: '127.0.0.1', port: g.port });
    s.on('error', () => {});
    s.on('close', () => (done = true));
    s.resume();
    s.write(bytes);
    t.teardown(() => s.destroy());
    return { closed: () => done };
  };
  const head = stalled(`GET http://${TARGET_HOST}:${targetPort}/ HTTP/1.1\r\nHost: x\r\n`);
  // A target that waits for the whole body, as a page's upload goes.
  const upload = http.createServer((req) => req.resume());
  const uploadPort = await listenOn(upload, TARGET_HOST);
  t.teardown(() => closeServer(upload));
  const body = stalled(`POST http://${TARGET_HOST}:${uploadPort}/ HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nabc`);
  const tunnel = await connectVia(g.port, `${TARGET_HOST}:${targetPort}`);
  t.equal(tunnel.status, 200);
  const socket = tunnel.socket!;
  t.teardown(() => socket.destroy());
  t.ok(await eventually(head.closed), 'a half-sent head is dropped');
  t.ok(await eventually(body.closed), 'a half-sent body is dropped');
  // Past the request bound and a look of the server's at it, for the tunnel too.
  await new Promise((r) => setTimeout(r, 1_500));
  const echo = await new Promise<string>((resolve) => {
    socket.once('data', (c: Buffer) => resolve(c.toString('latin1')));
    socket.write('still here');
  });
  t.equal(echo, 'still here', 'the tunnel opened before them still carries bytes');
});
