/**
 * What the chart carries from the rest of the repository stays the same as its source: the
 * OpenAPI document Envoy serves at /openapi.json, the SDS file of its certificate, and its config
 * (the chart's copy is templated; rendered with the Services' names and the default budget, it
 * is envoy/envoy.yaml: a change there fails here until files/envoy.yaml follows).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { parse } from 'yaml';
import { openapiJson } from '../../renderer/openapi/document.ts';
import { CHART, ROOT, render } from './helm.ts';

/* eslint-disable @typescript-eslint/no-explicit-any */
t.test('files/openapi.json is the document the renderer serves', async (t) => {
  const file = path.join(CHART, 'files/openapi.json');
  // After a change of the document: CHART_UPDATE_GOLDENS=1 npx tap test/chart/bundled-files.test.ts
  if (process.env['CHART_UPDATE_GOLDENS'] === '1') writeFileSync(file, openapiJson());
  t.equal(readFileSync(file, 'utf8'), openapiJson().toString('utf8'), 'regenerate with CHART_UPDATE_GOLDENS=1');
});

t.test("the rendered Envoy config is envoy/envoy.yaml with the release's names and budget", async (t) => {
  const objects = await render('monitoring-values.yaml', ['--set', 'fullnameOverride=x']);
  const cm: any = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'x-envoy');
  const rendered = parse(cm.data['envoy.yaml']);
  const source = readFileSync(path.join(ROOT, 'envoy/envoy.yaml'), 'utf8')
    .replaceAll('http://otel-collector:4318', 'http://otel-collector.observability:4318')
    .replaceAll('address: otel-collector,', 'address: otel-collector.observability,')
    .replaceAll('http://policy:8081', 'http://x-policy:8081')
    .replaceAll('address: policy,', 'address: x-policy,')
    .replaceAll('address: renderer,', 'address: x-renderer,');
  t.same(rendered, parse(source));
  t.equal(cm.data['tls-sds.yaml'], readFileSync(path.join(ROOT, 'envoy/tls-sds.yaml'), 'utf8'), 'the SDS file is envoy/tls-sds.yaml');
  t.equal(JSON.parse(cm.data['openapi.json']).openapi, '3.1.0');
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
