/**
 * Monitoring (off by default): ServiceMonitor and PrometheusRule valid against the Prometheus
 * Operator's models (@kubernetes-models/prometheus-operator: types, enums, required fields; those
 * models let unknown fields pass, so each object is also held to the fields it is meant to
 * have), every admin port scraped, the alerts a person on call needs on series the roles export,
 * and the dashboard a valid Grafana document over the same series.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { PrometheusRule, ServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1';
import t from 'tap';
import { CHART, helm, NAMESPACE, ofKind, render, RELEASE, ROOT, type K8sObject } from '../helm.ts';

/* eslint-disable @typescript-eslint/no-explicit-any */
let objects: K8sObject[] = [];
t.before(async () => {
  objects = await render('monitoring-values.yaml');
});

/** Series names any role registers (registry.counter/gauge/histogram('tintype_…')). */
function exportedSeries(): Set<string> {
  const out = new Set<string>();
  const text = execFileSync('grep', ['-rhoE', "\\.(counter|gauge|histogram)\\(\\s*'tintype_[a-z_]+'|'tintype_guard_[a-z_]+'", ...['renderer', 'policy', 'guard', 'lib', 'envoy', 'controller'].map((d) => path.join(ROOT, d))], { encoding: 'utf8' });
  for (const m of text.matchAll(/'(tintype_[a-z_]+)'/g)) out.add(m[1]!);
  return out;
}

t.test('off by default', async (t) => {
  const plain = await render('default-values.yaml');
  t.notOk(plain.some((o) => ['ServiceMonitor', 'PrometheusRule'].includes(o.kind)));
  t.notOk(plain.some((o) => o.kind === 'ConfigMap' && o.metadata.name.endsWith('-dashboard')));
});

t.test('the ServiceMonitor scrapes every admin port of the release', async (t) => {
  const [sm]: any[] = ofKind(objects, 'ServiceMonitor');
  t.doesNotThrow(() => new ServiceMonitor(sm).validate());
  t.same(Object.keys(sm.spec).sort(), ['endpoints', 'namespaceSelector', 'selector']);
  for (const e of sm.spec.endpoints) t.same(Object.keys(e).sort(), ['interval', 'path', 'port']);
  t.equal(sm.metadata.labels.release, 'prometheus', 'labels for the Prometheus that selects it');
  const services = ofKind(objects, 'Service') as any[];
  const selected = services.filter((s) => Object.entries(sm.spec.selector.matchLabels).every(([k, v]) => s.metadata.labels[k] === v));
  t.same(selected.map((s) => s.metadata.name).sort(), [`${RELEASE}-envoy-admin`, `${RELEASE}-guard-admin`, `${RELEASE}-policy-admin`, `${RELEASE}-renderer-admin`]);
  for (const s of selected) t.ok(s.spec.ports.some((p: any) => sm.spec.endpoints.some((e: any) => e.port === p.name)), `${s.metadata.name}: a scraped port`);
  // Only admin ports are scraped: policy's metrics are on its admin port (9081), not on 8081.
  t.same(sm.spec.endpoints.map((e: any) => e.port), ['admin']);
  for (const s of selected) t.same(s.spec.ports.map((p: any) => p.name), ['admin'], `${s.metadata.name}: its admin port only`);
});

/** The Envoy series the alerts read, as Envoy's Prometheus endpoint names its stats (http.<prefix>.*, server.*). */
const ENVOY_SERIES = ['envoy_http_downstream_rq_xx', 'envoy_http_downstream_rq_total', 'envoy_http_ext_authz_error', 'envoy_server_days_until_first_cert_expiring'];

/** A Prometheus duration (30s, 5m, 1h) in seconds. */
const seconds = (d: string): number => Number(d.slice(0, -1)) * ({ s: 1, m: 60, h: 3600 } as Record<string, number>)[d.slice(-1)]!;

t.test('the alerts: no ready renderer or policy, guard unverified, busy by rate, 5xx, store down, leases unsettled, the edge, the leader', async (t) => {
  const [rule]: any[] = ofKind(objects, 'PrometheusRule');
  t.doesNotThrow(() => new PrometheusRule(rule).validate());
  const rules = rule.spec.groups.flatMap((g: any) => g.rules);
  t.same(rules.map((r: any) => r.alert), ['TintypeNoReadyRenderer', 'TintypePolicyAbsent', 'TintypeGuardUnverified', 'TintypeBusy', 'TintypeServerErrors',
    'TintypePolicyStoreDown', 'TintypeLeasesExpiringUnsettled', 'TintypeEdgeServerErrors', 'TintypeExtAuthzErrors', 'TintypeEdgeCertificateExpiring']);
  const series = exportedSeries();
  const services = new Set(ofKind(objects, 'Service').map((s) => s.metadata.name));
  for (const r of rules) {
    t.same(Object.keys(r).sort(), ['alert', 'annotations', 'expr', 'for', 'labels']);
    for (const name of r.expr.match(/tintype_[a-z_]+/g) ?? []) t.ok(series.has(name), `${r.alert}: ${name} is a series a role exports`);
    t.match(r.expr, `namespace="${NAMESPACE}"`, `${r.alert}: this release's namespace only`);
    for (const [, s] of r.expr.matchAll(/service="([^"]+)"/g)) t.ok(services.has(s), `${r.alert}: the scraped Service ${s} is the chart's`);
    // One error, or one failed scrape, pages nobody: every alert holds for minutes, on rates.
    t.ok(seconds(r.for) >= 120, `${r.alert}: for ${r.for}`);
    t.notMatch(r.expr, /increase\(/, `${r.alert}: a rate over a window, not any increase`);
    for (const name of r.expr.match(/envoy_[a-z_]+(?=[{)])/g) ?? []) t.ok(ENVOY_SERIES.includes(name), `${r.alert}: ${name} is a series Envoy exports`);
    t.equal(r.annotations.runbook_url, `https://git.example.com/platform/tintype/-/blob/main/docs/helm.md#${r.alert.toLowerCase()}`, `${r.alert}: its runbook section`);
  }
  const errors = rules.find((r: any) => r.alert === 'TintypeServerErrors');
  t.notMatch(errors.expr, /busy/, '503 busy is not an error to page about');
  const busy = rules.find((r: any) => r.alert === 'TintypeBusy');
  t.match(busy.expr, /rate\(tintype_renders_total\{[^}]*outcome="busy"/, 'busy by the rate of busy answers');
  t.notMatch(busy.expr, /slots_busy/, 'not the momentary gauge');
  const leader = await render('monitoring-values.yaml', ['--set', 'controller.enabled=true']);
  const withController = (ofKind(leader, 'PrometheusRule')[0] as any).spec.groups.flatMap((g: any) => g.rules);
  t.ok(withController.some((r: any) => r.alert === 'TintypeNoControllerLeader' && /tintype_controller_leader/.test(r.expr)), 'with the controller: no leader');
});

t.test('each alert can be switched off and given its own threshold and duration; the edge certificate alert', async (t) => {
  const set = ['--set-json', 'monitoring.prometheusRule.alerts={"TintypeBusy":{"enabled":false},"TintypeServerErrors":{"threshold":0.2,"for":"30m"},"TintypeEdgeCertificateExpiring":{"threshold":21}}'];
  const rules = (ofKind(await render('monitoring-values.yaml', set), 'PrometheusRule')[0] as any).spec.groups.flatMap((g: any) => g.rules);
  t.notOk(rules.some((r: any) => r.alert === 'TintypeBusy'), 'TintypeBusy off');
  const errors = rules.find((r: any) => r.alert === 'TintypeServerErrors');
  t.match(errors.expr, / > 0\.2$/, 'its threshold');
  t.equal(errors.for, '30m', 'its duration');
  t.match(errors.annotations.summary, 'More than 20% of renders', 'the summary says the threshold');
  const cert = rules.find((r: any) => r.alert === 'TintypeEdgeCertificateExpiring');
  t.equal(cert.expr, `min(envoy_server_days_until_first_cert_expiring{namespace="${NAMESPACE}",service="${RELEASE}-envoy-admin"}) < 21`, "on Envoy's days until its first certificate expires");
  const refused = await helm(['template', RELEASE, CHART, '-f', path.join(CHART, 'ci/monitoring-values.yaml'), '--set', 'monitoring.prometheusRule.alerts.TintypeBusy.threshold=-1']);
  t.not(refused.code, 0, 'a threshold below 0 is refused');
  t.match(refused.stderr, /alerts\/TintypeBusy\/threshold/, 'naming the value');
});

t.test('ServiceMonitor and PrometheusRule only where their CRDs are served; NOTES says so', async (t) => {
  const r = await helm(['install', RELEASE, CHART, '-n', NAMESPACE, '--dry-run=client', '-f', path.join(CHART, 'ci/monitoring-values.yaml')]);
  t.equal(r.code, 0, r.stderr);
  t.notMatch(r.stdout, /kind: (ServiceMonitor|PrometheusRule)/, 'no CRD, no object (an install would fail on it)');
  t.match(r.stdout, /WARNING: monitoring\.serviceMonitors\.enabled is on but this cluster serves no ServiceMonitor CRD/);
  t.ok(ofKind(objects, 'ServiceMonitor').length === 1 && ofKind(objects, 'PrometheusRule').length === 1, 'with the CRDs: both');
});

t.test('the dashboard: render rate, latency, busy share, slots, guard refusals by reason', async (t) => {
  const cm: any = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === `${RELEASE}-dashboard`);
  t.equal(cm.metadata.labels.grafana_dashboard, '1');
  const dashboard = JSON.parse(cm.data['tintype.json']);
  t.same(dashboard, JSON.parse(readFileSync(path.join(ROOT, 'charts/tintype/files/dashboard.json'), 'utf8')));
  const exprs = dashboard.panels.flatMap((p: any) => p.targets.map((x: any) => x.expr)).join('\n');
  for (const s of ['tintype_renders_total', 'tintype_render_duration_seconds_bucket', 'tintype_render_slots_busy', 'tintype_render_slots', 'tintype_guard_refusals_total']) t.match(exprs, s);
  t.match(exprs, /sum by \(reason\) \(rate\(tintype_guard_refusals_total/);
  const series = exportedSeries();
  for (const name of exprs.match(/tintype_[a-z_]+/g) ?? []) t.ok(series.has(name.replace(/_bucket$/, '')), `${name} is exported`);
});
