/**
 * A request an edge lets through must not be refused behind it: the edge takes request headers
 * up to MAX_REQUEST_HEADER_BYTES from a client, then adds its own on the way (lease, key id,
 * trace, forwarding headers). Policy and the renderer, as real servers, must take that whole
 * header section; a bare 431 there would come after the lease was granted.
 */
import t from 'tap';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadConfig } from '../../lib/config.ts';
import { createLogger } from '../../lib/log.ts';
import { Registry } from '../../lib/metrics.ts';
import type { PolicyStore } from '../../policy/store/store.ts';
import { createPolicyServer } from '../../policy/server.ts';
import type { RenderCache } from '../../renderer/cache/index.ts';
import { ALONE } from '../../renderer/cache/flight.ts';
import type { RenderPool } from '../../renderer/operations/index.ts';
import { createRendererServer } from '../../renderer/server/index.ts';
import { MAX_REQUEST_HEADER_BYTES } from '../../envoy/edge/contract.ts';
import { TEST_LEASE_ENV } from '../lib/leases.ts';
import { EXT_AUTHZ_PREFIX, KEY_ID_HEADER, LEASE_HEADER, MAX_BODY_BYTES } from '../../lib/policy-contract.ts';
import { LIVE_PATH } from '../../lib/admin.ts';

/** Headers an edge adds to a routed request, at their longest plausible size. */
const EDGE_ADDED: Record<string, string> = {
  'x-forwarded-for': 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff',
  'x-forwarded-proto': 'https',
  'x-request-id': '00000000-0000-0000-0000-000000000000',
  'x-envoy-expected-rq-timeout-ms': '645000',
  traceparent: '00-' + 'a'.repeat(32) + '-' + 'b'.repeat(16) + '-01',
  tracestate: 'x'.repeat(256),
  // A signed lease: lease id, key id, operation, expiry and a MAC, with room to spare.
  [LEASE_HEADER]: 'l'.repeat(1024),
  [KEY_ID_HEADER]: 'key_' + 'k'.repeat(60),
  'content-length': String(MAX_BODY_BYTES),
};

/**
 * A client's headers that fill the edge's limit exactly, as the raw HTTP/1 header section Node
 * counts (request line, names, values, separators): what the embedded edge's listener takes.
 */
function clientHeadersAtLimit(requestLine: string): Record<string, string> {
  const out: Record<string, string> = { host: 'tintype.example' };
  const framing = (k: string, v: string): number => k.length + 2 + v.length + 2;
  let used = requestLine.length + 2 + framing('host', out['host']!) + 2;
  let i = 0;
  while (used < MAX_REQUEST_HEADER_BYTES) {
    const name = `x-filler-${i++}`;
    const room = MAX_REQUEST_HEADER_BYTES - used - framing(name, '');
    const value = 'v'.repeat(Math.max(1, Math.min(4000, room)));
    out[name] = value;
    used += framing(name, value);
  }
  return out;
}

/** Sends a raw-sized GET and resolves the status (431 from the server's parser, or its own answer). */
function get(port: number, path: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, method: 'GET', headers, agent: false }, (res) => {
      res.resume();
      res.once('end', () => resolve(res.statusCode ?? 0));
    });
    req.once('error', reject);
    req.end();
  });
}

const forwarded = (path: string): Record<string, string> => ({ ...clientHeadersAtLimit(`GET ${path} HTTP/1.1`), ...EDGE_ADDED });

t.test('the edge limit is Node\'s own, the limit of the embedded edge\'s listener', async (t) => {
  t.equal(MAX_REQUEST_HEADER_BYTES, http.maxHeaderSize);
});

t.test('policy takes a check that filled the edge limit, with what the edge added', async (t) => {
  const store = { migrate: async () => {}, listKeys: async () => [], ping: async () => {}, close: async () => {} } as unknown as PolicyStore;
  const server = createPolicyServer({ config: loadConfig({ PORT: '0', ...TEST_LEASE_ENV }), logger: createLogger('policy', { sink: () => {} }), store, host: '127.0.0.1' });
  await server.start();
  t.teardown(() => server.stop());
  const port = server.address().port;
  t.equal(await get(port, LIVE_PATH, { 'x-small': '1' }), 200, 'a small request');
  t.equal(await get(port, LIVE_PATH, forwarded(`${EXT_AUTHZ_PREFIX}/v1/ping`)), 200, 'no 431 behind the edge');
});

t.test('the renderer takes a routed request that filled the edge limit, with what the edge added', async (t) => {
  const pool = { render: async () => { throw new Error('not used'); }, selfTestPassed: () => true, stats: () => ({ slots: 1, busy: 0 }) } as unknown as RenderPool;
  const cache = { get: async () => undefined, set: async () => {}, flight: async () => ALONE } as unknown as RenderCache;
  const server = createRendererServer({
    config: loadConfig({ PORT: '0', TINTYPE_ADMIN_PORT: '0', ...TEST_LEASE_ENV }),
    logger: createLogger('renderer', { sink: () => {} }),
    registry: new Registry(),
    pool,
    cache,
    settler: { claim: async () => 'claimed' as const, release: async () => {}, settle: async () => {} },
    judge: async () => ({ ok: true }),
    host: '127.0.0.1',
  });
  await server.start();
  t.teardown(() => server.stop());
  const port = (server.address() as AddressInfo).port;
  // No lease: the renderer's own 401 shows the request was read; a 431 would come from the parser.
  t.equal(await get(port, '/v1/nothing', { 'x-small': '1' }), 401, 'a small request');
  t.equal(await get(port, '/v1/nothing', forwarded('/v1/nothing')), 401, 'no 431 behind the edge');
});
