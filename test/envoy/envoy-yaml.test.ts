/**
 * envoy/envoy.yaml cannot be run here, so its structure is checked: every piece that carries
 * the contract (docs/architecture.md §2) must say what the embedded edge does, from the same lists.
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { ServiceError } from '../../lib/errors.ts';
import { EXT_AUTHZ_PREFIX } from '../../lib/policy-contract.ts';
import {
  ALLOW_CLIENT_HEADERS, ALLOW_UPSTREAM_HEADERS, AUTHZ_REQUEST_HEADERS, DENY_CLIENT_HEADERS,
  MAX_BODY_BYTES, OPENAPI_PATH, ROUTED_PREFIX, STRIPPED_UPSTREAM_HEADERS,
} from '../../envoy/edge/contract.ts';

const doc = parse(readFileSync(new URL('../../envoy/envoy.yaml', import.meta.url), 'utf8'));
const listener = (name: string): any => doc.static_resources.listeners.find((l: any) => l.name === name);
const hcm = (l: any): any => l.filter_chains[0].filters.find((f: any) => f.name === 'envoy.filters.network.http_connection_manager').typed_config;
const pub = hcm(listener('public'));
const filters: any[] = pub.http_filters;
const filter = (name: string): any => filters.find((f) => f.name === name);
const exact = (m: any): string[] => m.patterns.map((p: any) => p.exact);
const routes: any[] = pub.route_config.virtual_hosts[0].routes;

t.test('every typed_config names an Envoy v3 type', async (t) => {
  const types: string[] = [];
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (v !== null && typeof v === 'object') {
      for (const [k, x] of Object.entries(v)) {
        if (k === '@type') types.push(String(x));
        walk(x);
      }
    }
  };
  walk(doc);
  t.ok(types.length >= 10);
  for (const ty of types) t.match(ty, /^type\.googleapis\.com\/envoy\.[a-z_.]+\.v3\.[A-Z][A-Za-z]+$/, ty);
});

t.test('the public listener is TLS; metrics and probes are on another listener', async (t) => {
  const l = listener('public');
  const tls = l.filter_chains[0].transport_socket;
  t.equal(tls.name, 'envoy.transport_sockets.tls');
  t.match(tls.typed_config['@type'], /DownstreamTlsContext$/);
  t.ok(tls.typed_config.common_tls_context.tls_certificates[0].certificate_chain.filename);
  const ops = listener('ops');
  t.not(ops.address.socket_address.port_value, l.address.socket_address.port_value);
  const opsPaths = hcm(ops).route_config.virtual_hosts[0].routes.map((r: any) => r.match.path);
  t.same(opsPaths.sort(), ['/healthz/live', '/healthz/ready', '/metrics']);
  t.notOk(routes.some((r) => ['/metrics', '/healthz/ready', '/healthz/live'].includes(r.match.path)), 'not on the public port');
  t.equal(doc.admin.address.socket_address.address, '127.0.0.1', "Envoy's admin API stays on loopback");
});

t.test('filter order: forged lease headers removed, body limit, ext_authz, router', async (t) => {
  t.same(filters.map((f) => f.name), [
    'envoy.filters.http.header_mutation', 'envoy.filters.http.buffer', 'envoy.filters.http.ext_authz', 'envoy.filters.http.router',
  ]);
  const removed = filter('envoy.filters.http.header_mutation').typed_config.mutations.request_mutations.map((m: any) => m.remove);
  t.same(removed, STRIPPED_UPSTREAM_HEADERS.filter((h) => h !== 'authorization'));
});

t.test('the body limit is the spec limit and answers the spec 413 body', async (t) => {
  t.equal(filter('envoy.filters.http.buffer').typed_config.max_request_bytes, MAX_BODY_BYTES);
  const mapper = pub.local_reply_config.mappers.find((m: any) => m.filter.status_code_filter.comparison.value.default_value === 413);
  t.same(JSON.parse(mapper.body.inline_string), new ServiceError('payload_too_large').answer().body);
  t.match(mapper.body_format_override.content_type, /^application\/json/);
});

t.test('ext_authz is made as the embedded edge makes it', async (t) => {
  const c = filter('envoy.filters.http.ext_authz').typed_config;
  t.equal(c.failure_mode_allow, false);
  t.equal(c.with_request_body, undefined, 'no body is sent to policy');
  t.equal(c.http_service.path_prefix, EXT_AUTHZ_PREFIX);
  t.equal(c.http_service.server_uri.cluster, 'policy');
  t.same(exact(c.http_service.authorization_request.allowed_headers), [...AUTHZ_REQUEST_HEADERS]);
  const r = c.http_service.authorization_response;
  t.same(exact(r.allowed_upstream_headers), [...ALLOW_UPSTREAM_HEADERS]);
  t.same(exact(r.allowed_client_headers), [...DENY_CLIENT_HEADERS]);
  t.same(exact(r.allowed_client_headers_on_success), [...ALLOW_CLIENT_HEADERS]);
  t.equal(c.status_on_error.code, 'ServiceUnavailable');
  const busy = pub.local_reply_config.mappers.find((m: any) => m.filter.status_code_filter.comparison.value.default_value === 503);
  const answer = new ServiceError('busy').answer();
  t.same(JSON.parse(busy.body.inline_string), answer.body, 'policy unreachable: the embedded edge answers busy too');
  t.equal(busy.headers_to_add[0].header.value, answer.headers['retry-after']);
});

t.test('routes: /openapi.json without a key, /v1/ to the renderer without the key, the rest 404', async (t) => {
  const openapi = routes.find((r) => r.match.path === OPENAPI_PATH);
  t.equal(openapi.typed_per_filter_config['envoy.filters.http.ext_authz'].disabled, true);
  t.equal(openapi.direct_response.status, 200);
  const v1 = routes.find((r) => r.match.prefix === ROUTED_PREFIX);
  t.equal(v1.route.cluster, 'renderer');
  t.same(v1.request_headers_to_remove, ['authorization']);
  t.ok(parseInt(v1.route.timeout, 10) >= 30, 'route timeout covers the default render budget');
  t.equal(v1.decorator.operation, 'edge', 'the edge span is named as README "Telemetry" says');
  const rest = routes.at(-1);
  t.equal(rest.match.prefix, '/');
  t.equal(rest.direct_response.status, 404);
  t.same(JSON.parse(rest.direct_response.body.inline_string), { error: 'not_found' });
  t.equal(rest.typed_per_filter_config['envoy.filters.http.ext_authz'].disabled, true);
  const clusters = doc.static_resources.clusters.map((c: any) => c.name);
  for (const needed of ['policy', 'renderer', 'otel_collector']) t.ok(clusters.includes(needed), needed);
});

t.test('tracing: OpenTelemetry, W3C traceparent', async (t) => {
  t.equal(pub.tracing.provider.name, 'envoy.tracers.opentelemetry');
  t.equal(pub.tracing.provider.typed_config.http_service.http_uri.cluster, 'otel_collector');
  t.ok(exact(filter('envoy.filters.http.ext_authz').typed_config.http_service.authorization_request.allowed_headers).includes('traceparent'));
});
