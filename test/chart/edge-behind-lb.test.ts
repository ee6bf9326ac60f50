/**
 * An edge behind a load balancer (docs/helm.md, "Envoy in a cluster"): envoy.trustedProxyHops sets
 * how many x-forwarded-for hops Envoy trusts for the client's address, envoy.proxyProtocol turns
 * the PROXY protocol listener filter on for the public listener alone (probes and metrics on the
 * ops listener keep plain connections). Each rendered config is walked against Envoy's v3 API.
 */
import t from 'tap';
import { walkBootstrap } from '../envoy/proto-walk.ts';
import { renderedEnvoy } from '../envoy/rendered.ts';
import { helm, CHART } from '../helm.ts';
import path from 'node:path';

/* eslint-disable @typescript-eslint/no-explicit-any */

const listener = (doc: any, name: string): any => doc.static_resources.listeners.find((l: any) => l.name === name);
const hcm = (l: any): any => l.filter_chains[0].filters.find((f: any) => f.name === 'envoy.filters.network.http_connection_manager').typed_config;

t.test('by default: the connection\'s address, no PROXY protocol', async (t) => {
  const { doc } = await renderedEnvoy('default-values.yaml');
  t.equal(hcm(listener(doc, 'public')).xff_num_trusted_hops, undefined);
  t.equal(listener(doc, 'public').listener_filters, undefined);
});

t.test('behind an L7 load balancer: one trusted x-forwarded-for hop', async (t) => {
  const { doc } = await renderedEnvoy('default-values.yaml', ['--set', 'envoy.trustedProxyHops=1']);
  t.same(walkBootstrap(doc), [], "valid against Envoy's API");
  const pub = hcm(listener(doc, 'public'));
  t.equal(pub.xff_num_trusted_hops, 1);
  t.equal(pub.use_remote_address, true, 'the address Envoy saw is still appended');
});

t.test('behind an L4 load balancer with the PROXY protocol: the public listener reads it, the ops listener does not', async (t) => {
  const { doc } = await renderedEnvoy('default-values.yaml', ['--set', 'envoy.proxyProtocol=true']);
  t.same(walkBootstrap(doc), [], "valid against Envoy's API");
  t.same(listener(doc, 'public').listener_filters.map((f: any) => f.name), ['envoy.filters.listener.proxy_protocol']);
  t.equal(listener(doc, 'ops').listener_filters, undefined, 'the kubelet\'s probes and Prometheus connect without it');
});

t.test('a hop count out of range is refused, naming the value', async (t) => {
  const r = await helm(['template', 'tt', CHART, '-f', path.join(CHART, 'ci/default-values.yaml'), '--set', 'envoy.trustedProxyHops=-1']);
  t.not(r.code, 0);
  t.match(r.stderr, /envoy\/trustedProxyHops/);
});
