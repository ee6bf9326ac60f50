/**
 * What GUARD_ALLOW_CIDRS can never open: the service itself. A real guard opened for all of
 * loopback, a name resolving to a loopback alias (the test's DNS server), listeners standing in
 * for the rest of the service on an alias, and ranges in GUARD_SELF_ADDRESSES. Every refusal is
 * `denied_host`, and the stand-ins accept no connection; a port the service does not use stays open.
 */
import http from 'node:http';
import t from 'tap';
import { ConfigError } from '../../lib/config.ts';
import { GUARD_REASON_HEADER } from '../../lib/guard-contract.ts';
import { createLogger } from '../../lib/log.ts';
import { createGuard } from '../../guard/index.ts';
import { startDnsServer } from './dns-server.ts';
import { closeServer, connectVia, listenOn, startCanary, viaGuard } from './helpers.ts';

const ALIAS = '127.0.0.7';

const dns = await startDnsServer((name, type) => {
  if (name === 'alias.test') return type === 'A' ? { addresses: [ALIAS] } : { addresses: [] };
  if (name === 'pods.test') return type === 'A' ? { addresses: ['10.100.3.4'] } : { addresses: [] };
  return { rcode: 3 };
});
t.teardown(() => dns.close());

// Stand-ins for the service's other listeners, bound to every address as the public port is.
const service = [await startCanary('0.0.0.0'), await startCanary('0.0.0.0')];
t.teardown(() => Promise.all(service.map((c) => c.close())));
// A site on the alias, on a port the service does not use.
const site = http.createServer((_req, res) => res.end('site'));
const sitePort = await listenOn(site, ALIAS);
t.teardown(() => closeServer(site));

const guard = createGuard({
  port: 0,
  host: '0.0.0.0',
  dnsServers: [dns.server],
  dnsTimeoutMs: 2_000,
  allowCidrs: ['127.0.0.0/8', '0.0.0.0/32', '::1/128', '10.0.0.0/8'],
  selfAddresses: ['10.96.0.0/12', 'fd00:96::/32'],
  servicePorts: () => service.map((c) => c.port),
  logger: createLogger('guard', { sink: () => {} }),
});
await guard.start();
t.teardown(() => guard.stop());
const port = guard.address().port!;

t.test('an opened loopback alias: the service\'s ports are denied_host, by address and by name', async (t) => {
  const ports = [...service.map((c) => c.port), port];
  for (const p of ports) {
    for (const host of [ALIAS, 'alias.test', '[::ffff:127.0.0.7]', '127.0.0.1', '[::1]', '0.0.0.0']) {
      const plain = await viaGuard({ port }, `http://${host}:${p}/`);
      t.equal(plain.status, 403, `GET ${host}:<service port>`);
      t.equal(plain.headers[GUARD_REASON_HEADER], 'denied_host');
      const tunnel = await connectVia(port, `${host}:${p}`);
      t.equal(tunnel.status, 403, `CONNECT ${host}:<service port>`);
      t.equal(tunnel.headers[GUARD_REASON_HEADER], 'denied_host');
    }
    const upgrade = await viaGuard({ port }, `http://alias.test:${p}/ws`, { headers: { connection: 'Upgrade', upgrade: 'websocket' } });
    t.equal(upgrade.status, 403, 'a WebSocket upgrade to a service port');
  }
  t.equal(service.reduce((n, c) => n + c.accepted(), 0), 0, 'no connection reached the service');

  const judged = await guard.judge().url(`http://alias.test:${service[0]!.port}/`);
  t.same(judged, { ok: false, reason: 'denied_host' }, 'the page-address check says the same');
  const other = await viaGuard({ port }, `http://alias.test:${sitePort}/`);
  t.equal(other.status, 200, 'a port the service does not use on the opened alias is reached');
  t.equal(other.body, 'site');
});

t.test('GUARD_SELF_ADDRESSES ranges are the service on every port, opened or not', async (t) => {
  for (const target of ['http://10.100.0.1/', 'http://pods.test:8443/', 'http://[fd00:96::5]/']) {
    const answer = await viaGuard({ port }, target);
    t.equal(answer.headers[GUARD_REASON_HEADER], target.includes('fd00') ? 'private_address' : 'denied_host', target);
  }
});

t.test('a GUARD_SELF_ADDRESSES entry with a slash must be a range', async (t) => {
  const bad = createGuard({ port: 0, selfAddresses: ['10.0.0.0/33'], logger: createLogger('guard', { sink: () => {} }) });
  await t.rejects(bad.start(), ConfigError);
  await t.rejects(bad.start(), /GUARD_SELF_ADDRESSES/);
});
