/**
 * Envoy cannot be run here, so the config the chart deploys (what `helm template` renders from
 * charts/tintype/files/envoy.yaml, tracing on) is proved another way: walked against Envoy's own
 * v3 API (test/envoy/proto-walk.ts), with a table of injected faults that shows the walk catches
 * each kind, and then held to what the embedded edge does (envoy/edge/contract.ts) and to the
 * roles behind it, one assertion per property of the design.
 */
import t from 'tap';
import http from 'node:http';
import { ServiceError } from '../../lib/errors.ts';
import { DEFAULT_POLICY_MAX_CONNECTIONS, DEFAULT_RENDER_TIMEOUT_MS, perPeerConnections } from '../../lib/config.ts';
import { ATTEMPT_HEADER, EXT_AUTHZ_PREFIX, MAX_BODY_BYTES, OPERATIONS } from '../../lib/policy-contract.ts';
import { POLICY_ADMIN_PORT, POLICY_KEEP_ALIVE_MS, DEFAULT_POLICY_PORT } from '../../policy/server.ts';
import { RENDERER_ADMIN_PORT, RENDERER_KEEP_ALIVE_MS, RENDERER_PORT } from '../../renderer/server/index.ts';
import { openapiJson } from '../../renderer/openapi/document.ts';
import { AUTHZ_IDLE_MS, AUTHZ_MAX_SOCKETS } from '../../envoy/edge/authz.ts';
import { UPSTREAM_IDLE_MS } from '../../envoy/edge/upstream.ts';
import {
  ALLOW_CLIENT_HEADERS, ALLOW_UPSTREAM_HEADERS, AUTHZ_REQUEST_HEADERS, DENY_CLIENT_HEADERS,
  LOCAL_REPLIES, MAX_CONNECTIONS, MAX_REQUEST_HEADER_BYTES, OPENAPI_PATH, REQUEST_HEADERS_TIMEOUT_MS,
  IDLE_TIMEOUT_MS, REQUEST_TIMEOUT_MS, RETRY, ROUTED_PREFIX, STRIPPED_UPSTREAM_HEADERS, budgetTimeouts,
} from '../../envoy/edge/contract.ts';
import { walkBootstrap, walkMessage, type WalkIssue } from './proto-walk.ts';
import { renderedEnvoy } from './rendered.ts';
import { LIVE_PATH, METRICS_PATH, READY_PATH } from '../../lib/admin.ts';

/** The render with tracing on (so the collector's cluster and the tracer are walked too). */
const { text, doc, sds } = await renderedEnvoy('monitoring-values.yaml');
/** The defaults, and the defaults with another render budget. */
const OTHER_BUDGET_MS = 90_000;
const defaults = await renderedEnvoy('default-values.yaml');
const otherBudget = await renderedEnvoy('default-values.yaml', ['--set', `renderBudgetMs=${OTHER_BUDGET_MS}`]);

const listener = (d: any, name: string): any => d.static_resources.listeners.find((l: any) => l.name === name);
const hcm = (l: any): any => l.filter_chains[0].filters.find((f: any) => f.name === 'envoy.filters.network.http_connection_manager').typed_config;
const pub = hcm(listener(doc, 'public'));
const filters: any[] = pub.http_filters;
const filter = (name: string): any => filters.find((f) => f.name === name);
const exact = (m: any): string[] => m.patterns.map((p: any) => p.exact);
const tintypeHost: any = pub.route_config.virtual_hosts[0];
const routes: any[] = tintypeHost.routes;
const cluster = (name: string): any => doc.static_resources.clusters.find((c: any) => c.name === name);
/** Routes that go to the renderer. */
const routed = routes.filter((r) => r.route?.cluster === 'renderer');
const httpOptions = (c: any): any => c.typed_extension_protocol_options['envoy.extensions.upstreams.http.v3.HttpProtocolOptions'];
/** A proto3 JSON duration ("45s", "0.5s") in milliseconds. */
const ms = (d: string): number => {
  if (!/^\d+(\.\d+)?s$/.test(d)) throw new Error(`not a duration: ${d}`);
  return Math.round(parseFloat(d) * 1000);
};
const mapper = (status: number): any => pub.local_reply_config.mappers.find((m: any) => m.filter.status_code_filter?.comparison.value.default_value === status);

t.test('the bootstrap is valid for Envoy\'s v3 API: no unknown field, wrong type, broken rule, deprecated field or unknown cluster', async (t) => {
  t.same(walkBootstrap(doc), [], 'tracing on');
  t.same(walkBootstrap(defaults.doc), [], 'the defaults');
  t.same(walkBootstrap(otherBudget.doc), [], `renderBudgetMs=${OTHER_BUDGET_MS}`);
  t.same(walkMessage(sds, 'envoy.service.discovery.v3.DiscoveryResponse').issues, [], 'the SDS file of the certificate');
});

/** A fault injected into a copy of the bootstrap, and the issue the walk must report for it. */
interface Fault {
  name: string;
  inject(d: any): void;
  path: RegExp;
  problem: RegExp;
}

const pubOf = (d: any): any => hcm(listener(d, 'public'));
const routeOf = (d: any, name: string): any => pubOf(d).route_config.virtual_hosts[0].routes.find((r: any) => r.name === name);
const filterOf = (d: any, name: string): any => pubOf(d).http_filters.find((f: any) => f.name === name);

const FAULTS: Fault[] = [
  {
    name: 'a misspelt filter type',
    inject: (d) => { filterOf(d, 'envoy.filters.http.buffer').typed_config['@type'] = 'type.googleapis.com/envoy.extensions.filters.http.buffer.v3.Bufer'; },
    path: /http_filters\[2\]\.typed_config\.@type$/,
    problem: /names no message/,
  },
  {
    name: 'timeout: 45ms (a duration Envoy does not read)',
    inject: (d) => { routeOf(d, 'screenshot').route = { ...routeOf(d, 'screenshot').route, timeout: '45ms' }; },
    path: /route\.timeout$/,
    problem: /must be a duration/,
  },
  {
    name: 'timeout: 45 (a number, not a duration)',
    inject: (d) => { routeOf(d, 'pdf').route = { ...routeOf(d, 'pdf').route, timeout: 45 }; },
    path: /route\.timeout$/,
    problem: /must be a duration/,
  },
  {
    name: 'codec_type: AUTOMATIC (no such enum value)',
    inject: (d) => { pubOf(d).codec_type = 'AUTOMATIC'; },
    path: /typed_config\.codec_type$/,
    problem: /"AUTOMATIC" is not a value of .*CodecType/,
  },
  {
    name: 'an unknown field (misspelt)',
    inject: (d) => { pubOf(d).use_remote_adress = true; },
    path: /typed_config\.use_remote_adress$/,
    problem: /unknown field of envoy\.extensions\.filters\.network\.http_connection_manager\.v3\.HttpConnectionManager/,
  },
  {
    name: 'an unknown field inside a typed Any',
    inject: (d) => { filterOf(d, 'envoy.filters.http.buffer').typed_config.max_request_byte = 1; },
    path: /http_filters\[2\]\.typed_config\.max_request_byte$/,
    problem: /unknown field of envoy\.extensions\.filters\.http\.buffer\.v3\.Buffer/,
  },
  {
    name: 'a YAML merge key (Envoy\'s YAML reader takes `<<` as a field)',
    inject: (d) => { cluster2(d, 'policy')['<<'] = { connect_timeout: '2s' }; },
    path: /clusters\[0\]\.<<$/,
    problem: /unknown field/,
  },
  {
    name: 'a `cluster:` no cluster defines',
    inject: (d) => { routeOf(d, 'og').route = { ...routeOf(d, 'og').route, cluster: 'renderers' }; },
    path: /route\.cluster$/,
    problem: /cluster "renderers" is not defined/,
  },
  {
    name: 'an ext_authz cluster no cluster defines',
    inject: (d) => { filterOf(d, 'envoy.filters.http.ext_authz').typed_config.http_service.server_uri.cluster = 'polcy'; },
    path: /server_uri\.cluster$/,
    problem: /cluster "polcy" is not defined/,
  },
  {
    name: 'a range that is not a number',
    inject: (d) => { routeOf(d, 'too_large').match.headers[0].range_match.start = '4 MiB'; },
    path: /range_match\.start$/,
    problem: /must be a whole number/,
  },
  {
    name: 'a wrong type (a string for a number)',
    inject: (d) => { filterOf(d, 'envoy.filters.http.buffer').typed_config.max_request_bytes = '4 MiB'; },
    path: /max_request_bytes$/,
    problem: /must be a whole number/,
  },
  {
    name: 'a wrong type (a list for an object)',
    inject: (d) => { pubOf(d).common_http_protocol_options = []; },
    path: /common_http_protocol_options$/,
    problem: /must be an object/,
  },
  {
    name: 'two members of one oneof (route and direct_response)',
    inject: (d) => { routeOf(d, 'ping').direct_response = { status: 200 }; },
    path: /routes\[\d+\]$/,
    problem: /oneof action takes one of its members, not route and direct_response/,
  },
  {
    name: 'a required message missing (a route without match)',
    inject: (d) => { delete routeOf(d, 'ping').match; },
    path: /routes\[\d+\]\.match$/,
    problem: /required field missing/,
  },
  {
    name: 'a required string missing (stat_prefix: min_len 1)',
    inject: (d) => { delete pubOf(d).stat_prefix; },
    path: /typed_config\.stat_prefix$/,
    problem: /missing: must be at least 1 characters/,
  },
  {
    name: 'a required oneof left empty (a cluster\'s endpoint without an address)',
    inject: (d) => { cluster2(d, 'envoy_admin').load_assignment.endpoints[0].lb_endpoints[0].endpoint.address = { socket_address: { address: '127.0.0.1' } }; },
    path: /socket_address$/,
    problem: /one of port_value, named_port is required/,
  },
  {
    name: 'a validate rule broken (port over 65535)',
    inject: (d) => { cluster2(d, 'otel_collector').load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address.port_value = 70000; },
    path: /port_value$/,
    problem: /must be <= 65535/,
  },
  {
    name: 'a validate rule broken (a duration that must be over 0)',
    inject: (d) => { cluster2(d, 'policy').connect_timeout = '0s'; },
    path: /clusters\[0\]\.connect_timeout$/,
    problem: /must be > 0s/,
  },
  {
    name: 'a deprecated field: text_format (use text_format_source)',
    inject: (d) => {
      const m = pubOf(d).local_reply_config.mappers[0];
      m.body_format_override = { text_format: '%LOCAL_REPLY_BODY%', content_type: 'application/json' };
    },
    path: /body_format_override\.text_format$/,
    problem: /deprecated.*SubstitutionFormatString\.text_format/,
  },
  {
    name: 'a deprecated field: ext_authz authorization_request.allowed_headers (use the top-level allowed_headers)',
    inject: (d) => {
      const c = filterOf(d, 'envoy.filters.http.ext_authz').typed_config;
      c.http_service.authorization_request = { allowed_headers: c.allowed_headers };
      delete c.allowed_headers;
    },
    path: /authorization_request\.allowed_headers$/,
    problem: /deprecated.*AuthorizationRequest\.allowed_headers/,
  },
  {
    name: 'a deprecated field: a cluster\'s own common_http_protocol_options',
    inject: (d) => { cluster2(d, 'renderer').common_http_protocol_options = { idle_timeout: '60s' }; },
    path: /clusters\[1\]\.common_http_protocol_options$/,
    problem: /deprecated/,
  },
  {
    name: 'a deprecated enum value: transport_api_version V2',
    inject: (d) => { filterOf(d, 'envoy.filters.http.ext_authz').typed_config.transport_api_version = 'V2'; },
    path: /transport_api_version$/,
    problem: /deprecated.*ApiVersion\.V2/,
  },
  {
    name: 'a field with no value (`key:` and nothing after it)',
    inject: (d) => { pubOf(d).stream_idle_timeout = null; },
    path: /stream_idle_timeout$/,
    problem: /has no value/,
  },
];

function cluster2(d: any, name: string): any {
  return d.static_resources.clusters.find((c: any) => c.name === name);
}

t.test('injected faults: the walk catches each', async (t) => {
  for (const fault of FAULTS) {
    const copy = structuredClone(doc);
    fault.inject(copy);
    const issues: WalkIssue[] = walkBootstrap(copy);
    const hit = issues.find((i) => fault.path.test(i.path) && fault.problem.test(i.problem));
    t.ok(hit, fault.name, { issues });
  }
});

t.test('the public listener is TLS from SDS with a watched directory; metrics and probes on another listener', async (t) => {
  const l = listener(doc, 'public');
  const tls = l.filter_chains[0].transport_socket;
  t.equal(tls.name, 'envoy.transport_sockets.tls');
  const ctx = tls.typed_config.common_tls_context;
  t.equal(ctx.tls_certificates, undefined, 'no certificate read once at start');
  t.equal(ctx.tls_certificate_sds_secret_configs.length, 1);
  const sdsConfig = ctx.tls_certificate_sds_secret_configs[0];
  const source = sdsConfig.sds_config.path_config_source;
  t.ok(source.watched_directory.path, 'the SDS file is re-read when its directory changes');
  const secret = sds.resources.find((r: any) => r.name === sdsConfig.name);
  t.ok(secret, 'the SDS file holds the secret the listener names');
  t.match(secret['@type'], /\.tls\.v3\.Secret$/);
  const cert = secret.tls_certificate;
  t.equal(cert.watched_directory.path, '/etc/tintype/tls', 'the certificate Secret\'s directory is watched');
  for (const f of [cert.certificate_chain.filename, cert.private_key.filename]) t.ok(f.startsWith(cert.watched_directory.path + '/'), f);
  const ops = listener(doc, 'ops');
  t.not(ops.address.socket_address.port_value, l.address.socket_address.port_value);
  const opsPaths = hcm(ops).route_config.virtual_hosts[0].routes.map((r: any) => r.match.path);
  t.same(opsPaths.sort(), [LIVE_PATH, READY_PATH, METRICS_PATH].sort());
  t.notOk(routes.some((r) => [METRICS_PATH, READY_PATH, LIVE_PATH].includes(r.match.path)), 'not on the public port');
  t.equal(doc.admin.address.socket_address.address, '127.0.0.1', "Envoy's admin API stays on loopback");
});

t.test('filter order: forged lease headers removed, ext_authz on the headers, then the body buffered, router', async (t) => {
  // ext_authz before buffer: the key is checked before a byte of the body is held, so bodies
  // without a key never take what a keyed request needs (docs/security.md "The meter's walls").
  t.same(filters.map((f) => f.name), [
    'envoy.filters.http.header_mutation', 'envoy.filters.http.ext_authz', 'envoy.filters.http.buffer', 'envoy.filters.http.router',
  ]);
  t.notOk(filter('envoy.filters.http.ext_authz').typed_config.with_request_body, 'ext_authz neither waits for nor buffers the body');
  const removed = filter('envoy.filters.http.header_mutation').typed_config.mutations.request_mutations.map((m: any) => m.remove);
  t.same(removed, STRIPPED_UPSTREAM_HEADERS.filter((h) => h !== 'authorization'));
  for (const r of routed) t.same(r.request_headers_to_remove, ['authorization'], `${r.name}: the key stays at the edge`);
});

t.test('the body limit is the spec limit: an announced length past it is 413 before any key lookup, a chunked body past it 413 as it arrives', async (t) => {
  t.equal(filter('envoy.filters.http.buffer').typed_config.max_request_bytes, MAX_BODY_BYTES);
  // The first route for /v1/: Envoy takes the first route that matches, so no operation's comes before it.
  const first = routes.findIndex((r) => r.match.prefix === ROUTED_PREFIX || r.match.path?.startsWith(ROUTED_PREFIX));
  const tooLarge = routes[first];
  t.equal(tooLarge.name, 'too_large');
  t.equal(tooLarge.match.prefix, ROUTED_PREFIX);
  t.same(tooLarge.match.headers.map((h: any) => h.name), ['content-length']);
  // Int64Range: start inclusive, end exclusive.
  const { start, end } = tooLarge.match.headers[0].range_match;
  const matches = (n: bigint): boolean => n >= BigInt(start) && n < BigInt(end);
  t.notOk(matches(BigInt(MAX_BODY_BYTES)), 'the limit itself passes');
  t.ok(matches(BigInt(MAX_BODY_BYTES) + 1n), 'one byte more is refused');
  t.ok(matches(2n ** 63n - 1n - 1n), 'as is any larger length Envoy reads (int64, written as a string so YAML keeps every digit)');
  t.equal(end, '9223372036854775807');
  t.equal(tooLarge.direct_response.status, 413);
  t.same(JSON.parse(tooLarge.direct_response.body.inline_string), LOCAL_REPLIES[413]);
  t.equal(tooLarge.typed_per_filter_config['envoy.filters.http.ext_authz'].disabled, true, 'no key looked up for it');
});

t.test('ext_authz is made as the embedded edge makes it', async (t) => {
  const c = filter('envoy.filters.http.ext_authz').typed_config;
  t.equal(c.failure_mode_allow, false);
  t.equal(c.with_request_body, undefined, 'no body is sent to policy');
  t.equal(c.http_service.path_prefix, EXT_AUTHZ_PREFIX);
  t.equal(c.http_service.server_uri.cluster, 'policy');
  t.same(exact(c.allowed_headers), [...AUTHZ_REQUEST_HEADERS]);
  const r = c.http_service.authorization_response;
  t.same(exact(r.allowed_upstream_headers), [...ALLOW_UPSTREAM_HEADERS]);
  t.same(exact(r.allowed_client_headers), [...DENY_CLIENT_HEADERS]);
  t.same(exact(r.allowed_client_headers_on_success), [...ALLOW_CLIENT_HEADERS]);
  t.equal(c.status_on_error.code, 'ServiceUnavailable', 'policy unreachable: 503 busy, as the embedded edge');
  const p = cluster('policy').load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address;
  t.equal(p.port_value, DEFAULT_POLICY_PORT);
});

t.test('Envoy opens no more connections to policy than policy holds from one peer', async (t) => {
  const [limits] = cluster('policy').circuit_breakers.thresholds;
  t.ok(limits.max_connections <= perPeerConnections(DEFAULT_POLICY_MAX_CONNECTIONS), `${limits.max_connections} connections at most`);
  t.ok(AUTHZ_MAX_SOCKETS <= perPeerConnections(DEFAULT_POLICY_MAX_CONNECTIONS), 'nor does the embedded edge');
});

t.test('upstream idle timeouts are below the keep-alive of the role behind them', async (t) => {
  const renderer = ms(httpOptions(cluster('renderer')).common_http_protocol_options.idle_timeout);
  const policy = ms(httpOptions(cluster('policy')).common_http_protocol_options.idle_timeout);
  t.ok(renderer < RENDERER_KEEP_ALIVE_MS, `renderer: ${renderer} ms < ${RENDERER_KEEP_ALIVE_MS} ms`);
  t.ok(policy < POLICY_KEEP_ALIVE_MS, `policy: ${policy} ms < ${POLICY_KEEP_ALIVE_MS} ms`);
  t.ok(UPSTREAM_IDLE_MS < RENDERER_KEEP_ALIVE_MS, 'the embedded edge lets go first too (renderer)');
  t.ok(AUTHZ_IDLE_MS < POLICY_KEEP_ALIVE_MS, 'the embedded edge lets go first too (policy)');
});

t.test('retries: once, on another renderer, when nothing reached the first or it answered 503', async (t) => {
  t.ok(routed.length > 0);
  for (const r of routed) {
    const p = r.route.retry_policy;
    t.equal(p.num_retries, RETRY.attempts, `${r.name}: once`);
    t.same(p.retry_on.split(',').sort(), [...RETRY.on, 'retriable-status-codes'].sort(), `${r.name}: on what`);
    t.same(p.retriable_status_codes, [...RETRY.statuses], `${r.name}: 503`);
    t.same(p.retry_host_predicate.map((h: any) => h.name), ['envoy.retry_host_predicates.previous_hosts'], `${r.name}: another renderer`);
    t.ok(p.host_selection_retry_max_attempts > 1, `${r.name}: looks more than once for another renderer`);
  }
  t.ok(cluster('renderer').circuit_breakers.thresholds[0].max_retries > 0);
  // Without the attempt count a busy renderer closes the lease, and the retry settles as `already`.
  t.equal(tintypeHost.include_request_attempt_count, true, `renderers are told the attempt (${ATTEMPT_HEADER})`);
});

t.test('client-controlled x-envoy-* headers are off: only loopback is internal', async (t) => {
  t.equal(pub.use_remote_address, true);
  t.equal(pub.xff_num_trusted_hops, undefined);
  const c = pub.internal_address_config;
  t.equal(c.unix_sockets, false);
  // Loopback, in each form it takes on the dual-stack listener (IPv4 arrives IPv4-mapped).
  t.same(c.cidr_ranges, [{ address_prefix: '127.0.0.1', prefix_len: 32 }, { address_prefix: '::1', prefix_len: 128 }, { address_prefix: '::ffff:127.0.0.1', prefix_len: 128 }]);
  t.equal(filter('envoy.filters.http.router').typed_config.suppress_envoy_headers, true);
});

t.test('header size: the edge takes what the embedded edge takes (Node\'s limit); the roles take more', async (t) => {
  t.equal(pub.max_request_headers_kb * 1024, MAX_REQUEST_HEADER_BYTES);
  t.equal(MAX_REQUEST_HEADER_BYTES, http.maxHeaderSize, 'Node\'s own limit');
  // The roles' side is proved with real servers in header-room.test.ts.
});

t.test('timeouts follow the render budget; headers and whole request as the embedded edge', async (t) => {
  const b = budgetTimeouts(DEFAULT_RENDER_TIMEOUT_MS);
  for (const r of routed) t.equal(ms(r.route.timeout), b.routeMs, `${r.name}: route timeout = budget + margin`);
  t.equal(ms(pub.stream_idle_timeout), b.streamIdleMs);
  t.ok(b.streamIdleMs > b.routeMs, 'a quiet render is cut by the route timeout (504), never by the idle timeout');
  t.equal(ms(pub.request_headers_timeout), REQUEST_HEADERS_TIMEOUT_MS);
  t.equal(ms(pub.request_timeout), REQUEST_TIMEOUT_MS);
  t.equal(ms(pub.common_http_protocol_options.idle_timeout), IDLE_TIMEOUT_MS, 'an idle client connection: as the embedded edge');
  // Each budget-derived value is marked for whoever templates the file from the budget.
  const lines = text.split('\n');
  const marked = (key: RegExp): boolean => lines.some((l, i) => key.test(l) && /#\s*budget:/.test(lines[i - 1] ?? ''));
  t.ok(marked(/^\s+stream_idle_timeout:/), 'stream_idle_timeout is marked');
  t.ok(marked(/^\s+timeout: \d+s$/), 'the route timeout is marked');
  t.notOk(/45s/.test(text.split('\n').filter((l) => !/^\s+timeout: 45s$/.test(l)).join('\n')), 'the budget appears in one place only (the shared route)');
});

t.test('the chart sets every budget-derived timeout from the one value renderBudgetMs', async (t) => {
  for (const [name, r, budgetMs] of [['defaults', defaults, DEFAULT_RENDER_TIMEOUT_MS], [`renderBudgetMs=${OTHER_BUDGET_MS}`, otherBudget, OTHER_BUDGET_MS]] as const) {
    const b = budgetTimeouts(budgetMs);
    const p = hcm(listener(r.doc, 'public'));
    const rs: any[] = p.route_config.virtual_hosts[0].routes.filter((x: any) => x.route?.cluster === 'renderer');
    t.ok(rs.length > 0, `${name}: routes to the renderer`);
    for (const x of rs) t.equal(ms(x.route.timeout), b.routeMs, `${name}, ${x.name}: route timeout = budget + margin`);
    t.equal(ms(p.stream_idle_timeout), b.streamIdleMs, `${name}: stream idle timeout`);
    t.equal(ms(p.request_headers_timeout), REQUEST_HEADERS_TIMEOUT_MS, `${name}: not from the budget`);
    t.equal(ms(p.request_timeout), REQUEST_TIMEOUT_MS, `${name}: not from the budget`);
  }
  // Nothing else moves with the budget: the two renders differ only in the marked values.
  const strip = (d: any): any => {
    const c = structuredClone(d);
    const p = hcm(listener(c, 'public'));
    delete p.stream_idle_timeout;
    for (const x of p.route_config.virtual_hosts[0].routes) if (x.route?.cluster === 'renderer') delete x.route.timeout;
    return c;
  };
  t.same(strip(otherBudget.doc), strip(defaults.doc));
});

t.test('every answer Envoy writes itself is JSON with the spec\'s code', async (t) => {
  for (const [status, body] of Object.entries(LOCAL_REPLIES)) {
    const m = mapper(Number(status));
    t.ok(m, `a mapper for ${status}`);
    if (m === undefined) continue;
    t.same(JSON.parse(m.body.inline_string), body, `${status} body`);
    t.equal(m.body_format_override.text_format_source.inline_string, '%LOCAL_REPLY_BODY%');
    t.match(m.body_format_override.content_type, /^application\/json/);
  }
  t.same(LOCAL_REPLIES[413], new ServiceError('payload_too_large').answer().body);
  const busy = new ServiceError('busy').answer();
  t.same(LOCAL_REPLIES[503], busy.body);
  t.equal(mapper(503).headers_to_add[0].header.key, 'retry-after');
  t.equal(mapper(503).headers_to_add[0].header.value, busy.headers['retry-after']);
  for (const r of routes.filter((r) => r.direct_response !== undefined && r.direct_response.status !== 200)) {
    t.same(JSON.parse(r.direct_response.body.inline_string), LOCAL_REPLIES[r.direct_response.status], `${r.name}: ${r.direct_response.status}`);
  }
});

t.test('/openapi.json: the renderer\'s document, GET and HEAD only, no key', async (t) => {
  const [get, other] = routes.filter((r) => r.match.path === OPENAPI_PATH);
  t.same(get.match.headers.map((h: any) => h.name), [':method']);
  const methods = new RegExp(get.match.headers[0].string_match.safe_regex.regex);
  for (const m of ['GET', 'HEAD']) t.ok(methods.test(m), m);
  for (const m of ['POST', 'PUT', 'DELETE', 'OPTIONS', 'GETX', 'XGET']) t.notOk(methods.test(m), m);
  t.equal(get.direct_response.status, 200);
  t.ok(openapiJson().length <= pub.route_config.max_direct_response_body_size_bytes, 'the document fits a direct response');
  t.match(text, /renderer\/openapi\/document\.ts/, 'the file says which document to mount');
  t.equal(other.direct_response.status, 405);
  t.equal(other.response_headers_to_add[0].header.value, 'GET, HEAD');
  for (const r of [get, other]) t.equal(r.typed_per_filter_config['envoy.filters.http.ext_authz'].disabled, true);
});

t.test('routes: every operation to the renderer; any other path 404 without a key', async (t) => {
  for (const [op, d] of Object.entries(OPERATIONS)) {
    const r = routed.find((x) => x.match.path === d.path);
    t.ok(r, op);
    t.equal(r?.name, op, `${op}: named after its operation (log, span)`);
  }
  t.ok(routed.some((r) => r.match.prefix === ROUTED_PREFIX), 'other /v1/ paths are checked, then the renderer answers 404/405');
  const p = cluster('renderer').load_assignment.endpoints[0].lb_endpoints[0].endpoint;
  t.equal(p.address.socket_address.port_value, RENDERER_PORT);
  const rest = routes.at(-1);
  t.equal(rest.match.prefix, '/');
  t.equal(rest.direct_response.status, 404);
  t.equal(rest.typed_per_filter_config['envoy.filters.http.ext_authz'].disabled, true);
});

/** Whether an access log's filter (header filters on `:path`, alone or under and_filter / or_filter) lets `path` through. */
function logs(filter: any, path: string): boolean {
  if (filter.and_filter !== undefined) return filter.and_filter.filters.every((f: any) => logs(f, path));
  if (filter.or_filter !== undefined) return filter.or_filter.filters.some((f: any) => logs(f, path));
  const h = filter.header_filter.header;
  if (h.name !== ':path') throw new Error(`a header filter on ${h.name}`);
  // Envoy's safe_regex matches the whole value.
  return new RegExp(`^(?:${h.string_match.safe_regex.regex})$`).test(path) !== (h.invert_match === true);
}

t.test('access log: the path without its query, except og\'s; an og query with a key-shaped token is not written', async (t) => {
  const all: any[] = pub.access_log;
  const KEY = 'sk_' + 'A1b2'.repeat(11);
  const paths = ['/v1/og', '/v1/og?template=title&title=x', '/v1/ogx?title=x', '/v1/screenshot', '/v1/screenshot?url=x', '/v1/og/x?y', '/openapi.json',
    `/v1/og?title=${KEY}`, `/v1/og?template=title&title=my%20key%20${KEY}&x=1`, `/v1/screenshot?k=${KEY}`];
  for (const p of paths) t.equal(all.filter((l) => logs(l.filter, p)).length, 1, `one log line for ${p}`);
  const lineFor = (p: string): any => all.find((l) => logs(l.filter, p))!.typed_config.log_format;
  const og = lineFor('/v1/og?title=x');
  t.equal(og.json_format.path, '%REQ(:PATH)%', 'the og query is logged (spec 4.5 rule 7)');
  t.not(lineFor('/v1/ogx?title=x'), og);
  for (const p of ['/v1/screenshot?url=x', `/v1/og?title=${KEY}`, `/v1/og?template=title&title=my%20key%20${KEY}&x=1`]) {
    const fmt = lineFor(p);
    t.equal(fmt.json_format.path, '%REQ_WITHOUT_QUERY(:PATH)%', `${p}: without its query`);
    t.same(fmt.formatters.map((f: any) => f.name), ['envoy.formatter.req_without_query']);
    t.notMatch(Object.values(fmt.json_format).join(' '), /%REQ\(:PATH\)%|%PATH%/, `${p}: no query`);
  }
  t.equal(lineFor(`/v1/og?title=${KEY}`).json_format.query, '[redacted: holds a key-shaped token]', 'says why the og query is missing');
  t.ok(logs(all.find((l) => l.typed_config.log_format.json_format.path === '%REQ(:PATH)%').filter, '/v1/og?title=sk_short'), 'a token too short to be a key is no key');
  // However the key is spelt in the query, or whatever a key-named parameter holds: never written.
  const hidden = [`/v1/og?title=sk%5F${KEY.slice(3)}`, `/v1/og?title=sk%5f${KEY.slice(3)}`, `/v1/og?title=%73%6B%5F${KEY.slice(3)}`,
    `/v1/og?title=sk%255F${KEY.slice(3)}`, `/v1/og?title=sk_${encodeURIComponent('A1b2').replace(/./g, (c) => '%' + c.charCodeAt(0).toString(16)).repeat(3)}`,
    '/v1/og?title=x&api_key=hello', '/v1/og?API-KEY=hello', '/v1/og?api%5Fkey=hello', '/v1/og?title=x&token=abc', '/v1/og?%61pi_key=hello'];
  for (const p of hidden) t.equal(lineFor(p).json_format.query, '[redacted: holds a key-shaped token]', `${p}: the query is not written`);
  for (const p of ['/v1/og?title=monkey&keyword=x', '/v1/og?template=title&title=task_list']) t.equal(lineFor(p).json_format.path, '%REQ(:PATH)%', `${p}: no key, logged`);
  for (const l of all) {
    const fields = Object.values(l.typed_config.log_format.json_format).join(' ');
    t.notMatch(fields, /AUTHORIZATION|BODY|%REQ\(:PATH\)%.*%REQ\(:PATH\)%/i, 'no key, no body');
  }
});

t.test('health: active checks on the renderer\'s admin readiness, no panic routing, local-origin ejection only', async (t) => {
  const c = cluster('renderer');
  t.equal(c.lb_policy, 'LEAST_REQUEST');
  t.equal(c.type, 'STRICT_DNS', 'a headless Service: every pod address');
  const hc = c.health_checks[0];
  t.equal(hc.http_health_check.path, READY_PATH);
  t.equal(c.load_assignment.endpoints[0].lb_endpoints[0].endpoint.health_check_config.port_value, RENDERER_ADMIN_PORT, 'on the admin port');
  t.equal(c.common_lb_config.healthy_panic_threshold.value, 0, 'an unverified pod never takes a render');
  t.equal(c.common_lb_config.ignore_new_hosts_until_first_hc, true);
  const o = c.outlier_detection;
  t.equal(o.split_external_local_origin_errors, true);
  t.equal(o.enforcing_consecutive_local_origin_failure, 100);
  for (const k of ['enforcing_consecutive_5xx', 'enforcing_consecutive_gateway_failure', 'enforcing_success_rate', 'enforcing_failure_percentage']) {
    t.equal(o[k], 0, `${k}: a 503 busy or a failed render is an answer, not a sick pod`);
  }
  t.equal(cluster('policy').health_checks[0].http_health_check.path, READY_PATH);
  t.equal(cluster('policy').load_assignment.endpoints[0].lb_endpoints[0].endpoint.health_check_config.port_value, POLICY_ADMIN_PORT, "on policy's admin port");
});

t.test('edge hygiene: connection limit, underscores refused, path normalised, HTTP/2 bounded', async (t) => {
  const monitors = doc.overload_manager.resource_monitors;
  const conns = monitors.find((m: any) => m.name === 'envoy.resource_monitors.global_downstream_max_connections');
  t.equal(conns.typed_config.max_active_downstream_connections, MAX_CONNECTIONS);
  t.equal(pub.common_http_protocol_options.headers_with_underscores_action, 'REJECT_REQUEST');
  t.equal(pub.normalize_path, true);
  t.equal(pub.merge_slashes, true);
  t.equal(pub.path_with_escaped_slashes_action, 'REJECT_REQUEST');
  const h2 = pub.http2_protocol_options;
  t.ok(h2.max_concurrent_streams > 0 && h2.max_concurrent_streams <= 100);
  t.ok(h2.initial_stream_window_size <= 65536);
  t.ok(h2.initial_connection_window_size <= 1048576);
  t.ok(listener(doc, 'public').per_connection_buffer_limit_bytes <= 32768);
});

t.test('tracing: one server span named edge per request, tagged as the embedded edge tags it', async (t) => {
  t.equal(listener(doc, 'public').traffic_direction, 'INBOUND', 'a server span');
  t.equal(pub.tracing.spawn_upstream_span, false, 'no span between edge and render');
  t.equal(pub.tracing.provider.name, 'envoy.tracers.opentelemetry');
  t.equal(pub.tracing.provider.typed_config.http_service.http_uri.cluster, 'otel_collector');
  t.same(pub.tracing.custom_tags, [{ tag: 'http.request.method', request_header: { name: ':method' } }]);
  for (const r of routed) {
    t.equal(r.decorator.operation, 'edge', `${r.name}: the span is named edge`);
    t.same(r.tracing.custom_tags, [{ tag: 'tintype.operation', literal: { value: r.name } }], `${r.name}: tintype.operation`);
  }
  t.ok(exact(filter('envoy.filters.http.ext_authz').typed_config.allowed_headers).includes('traceparent'), 'policy joins the trace');
});
