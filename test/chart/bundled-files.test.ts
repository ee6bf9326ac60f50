/**
 * The chart is the one home of Envoy's bootstrap and SDS file (files/; test/envoy/ proves what
 * they render to). The OpenAPI document Envoy serves at /openapi.json is the one thing it carries
 * as a copy: Helm's .Files reads only files inside the chart, and the document's source is
 * renderer/openapi/document.ts, so files/openapi.json is generated from it and held equal here.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { parse } from 'yaml';
import { openapiJson } from '../../renderer/openapi/document.ts';
import { CHART, render } from '../helm.ts';

/* eslint-disable @typescript-eslint/no-explicit-any */
t.test('files/openapi.json is the document the renderer serves', async (t) => {
  const file = path.join(CHART, 'files/openapi.json');
  // After a change of the document: CHART_UPDATE_GOLDENS=1 npx tap test/chart/bundled-files.test.ts
  if (process.env['CHART_UPDATE_GOLDENS'] === '1') writeFileSync(file, openapiJson());
  t.equal(readFileSync(file, 'utf8'), openapiJson().toString('utf8'), 'regenerate with CHART_UPDATE_GOLDENS=1');
});

t.test('the Envoy ConfigMap carries the bootstrap, its SDS file and the OpenAPI document', async (t) => {
  const objects = await render('monitoring-values.yaml', ['--set', 'fullnameOverride=x']);
  const cm: any = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'x-envoy');
  const config = parse(cm.data['envoy.yaml']);
  const cluster = (name: string): any => config.static_resources.clusters.find((c: any) => c.name === name);
  const address = (name: string): string => cluster(name).load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address.address;
  t.equal(address('policy'), 'x-policy', "the release's policy Service");
  t.equal(address('renderer'), 'x-renderer', "the release's renderer Service");
  t.equal(address('otel_collector'), 'otel-collector.observability', 'the collector of telemetry.otlpEndpoint');
  t.equal(parse(cm.data['tls-sds.yaml']).resources[0]['@type'], 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret');
  t.equal(cm.data['openapi.json'].trimEnd(), openapiJson().toString('utf8').trimEnd(), 'the document the renderer serves');
});

t.test('without tracing, Envoy has no tracer and no collector cluster', async (t) => {
  const objects = await render('default-values.yaml', ['--set', 'renderBudgetMs=60000']);
  const cm: any = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'tt-envoy');
  const config = parse(cm.data['envoy.yaml']);
  const hcm = config.static_resources.listeners[0].filter_chains[0].filters[0].typed_config;
  t.equal(hcm.tracing, undefined);
  t.notOk(config.static_resources.clusters.some((c: any) => c.name === 'otel_collector'));
  const route = hcm.route_config.virtual_hosts[0].routes.find((r: any) => r.match.path === '/v1/screenshot');
  t.equal(route.route.timeout, '75s', 'the route timeout is the render budget plus the edge margin');
  t.equal(hcm.stream_idle_timeout, '90s', 'the stream idle timeout is the budget plus twice the margin');
});
