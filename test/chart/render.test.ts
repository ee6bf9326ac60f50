/**
 * The chart renders and lints on every CI values file, refuses what it cannot run and any value
 * it does not know, and every object it renders is valid Kubernetes with no unknown field.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { CHART, CI_VALUES, helm, render } from '../helm.ts';
import { isBuiltIn, k8sErrors } from './k8s-schema.ts';

/* eslint-disable @typescript-eslint/no-explicit-any */

t.test('CI renders every charts/tintype/ci/*.yaml (a new one must be added to CI_VALUES)', async (t) => {
  const onDisk = readdirSync(path.join(CHART, 'ci')).filter((f) => f.endsWith('.yaml')).sort();
  t.same(onDisk, [...CI_VALUES].sort());
});

for (const values of CI_VALUES) {
  t.test(`${values}: helm lint --strict passes`, async (t) => {
    const r = await helm(['lint', '--strict', CHART, '-f', path.join(CHART, 'ci', values)]);
    t.equal(r.code, 0, r.stdout + r.stderr);
    t.match(r.stdout, /1 chart\(s\) linted, 0 chart\(s\) failed/);
  });

  t.test(`${values}: every rendered object is valid against the Kubernetes API, unknown fields refused`, async (t) => {
    const objects = await render(values);
    t.ok(objects.length > 20, `${objects.length} objects`);
    const builtIn = objects.filter(isBuiltIn);
    for (const o of builtIn) t.same(await k8sErrors(o), [], `${o.kind}/${o.metadata.name}`);
    // Custom resources are checked against their own schemas (renderpool.test.ts, monitoring.test.ts).
    const custom = objects.filter((o) => !isBuiltIn(o)).map((o) => `${o.apiVersion} ${o.kind}`);
    for (const c of custom) t.ok(['tintype.dev/v1alpha1 RenderPool', 'monitoring.coreos.com/v1 ServiceMonitor', 'monitoring.coreos.com/v1 PrometheusRule'].includes(c), c);
  });
}

t.test('the validator itself refuses an unknown field at any depth and a wrong type', async (t) => {
  const [deployment] = (await render('default-values.yaml')).filter((o) => o.kind === 'Deployment');
  const copy = structuredClone(deployment!) as any;
  copy.spec.template.spec.containers[0].securityContext.allowPrivilegeEscalaton = false;
  copy.spec.template.spec.containers[0].resources.limits.memory = { many: 1 };
  copy.spec.replicas = 'two';
  const errors = (await k8sErrors(copy)).join('\n');
  t.match(errors, /allowPrivilegeEscalaton: unknown field/);
  t.match(errors, /replicas/);
  t.match(errors, /memory: expected string/);
});

t.test('bare defaults are refused with a message that says what to set', async (t) => {
  const r = await helm(['template', 'tt', CHART]);
  t.not(r.code, 0);
  t.match(r.stderr, /set secrets\.existingSecret, or all of secrets\.databaseUrl, secrets\.redisUrl, secrets\.leaseSigningKey, secrets\.leasePublicKeys and secrets\.rendererToken/);
});

t.test('Envoy needs a certificate', async (t) => {
  const r = await helm(['template', 'tt', CHART, '--set', 'secrets.existingSecret=s,image.repository=r']);
  t.not(r.code, 0);
  t.match(r.stderr, /envoy needs a certificate/);
});

t.test('no image repository: refused with where to get one (no public image is published)', async (t) => {
  const r = await helm(['template', 'tt', CHART, '--set', 'secrets.existingSecret=s,tls.existingSecret=t']);
  t.not(r.code, 0);
  t.match(r.stderr, /set image\.repository to the tintype image you built and pushed/);
  const ok = await helm(['template', 'tt', CHART, '--set', 'secrets.existingSecret=s,tls.existingSecret=t,image.repository=registry.example.com/tintype']);
  t.equal(ok.code, 0, ok.stderr);
});

t.test('gVisor with user-namespaced pods, which the kubelet refuses, is refused at render', async (t) => {
  const r = await helm(['template', 'tt', CHART, '-f', path.join(CHART, 'ci/operator-scaling-values.yaml'), '--set', 'renderer.hostUsers=false']);
  t.not(r.code, 0);
  t.match(r.stderr, /renderer\.runtimeClassName and renderer\.hostUsers=false together/);
});

t.test('an existing Secret and secret values together are refused', async (t) => {
  const r = await helm(['template', 'tt', CHART, '-f', path.join(CHART, 'ci/default-values.yaml'), '--set', 'secrets.existingSecret=s']);
  t.not(r.code, 0);
  t.match(r.stderr, /leave secrets\.databaseUrl, secrets\.redisUrl, secrets\.leaseSigningKey, secrets\.leasePublicKeys, secrets\.guardTokenKey and secrets\.rendererToken empty/);
});

for (const bad of ['anything=1', 'renderer.anything=1', 'networkPolicy.dns.podSelector.anything=1', 'controller.renderPool.maxReplica=3', 'renderer.slots=0', 'logLevel=verbose', 'image.digest=sha256:short']) {
  t.test(`--set ${bad} fails on the values schema`, async (t) => {
    const r = await helm(['template', 'tt', CHART, '-f', path.join(CHART, 'ci/default-values.yaml'), '--set', bad]);
    t.not(r.code, 0);
    t.match(r.stderr, /values don't meet the specifications of the schema|schema/i);
  });
}

t.test('NOTES.txt says how to make the first key and call /v1/ping', async (t) => {
  for (const [values, extra] of [['default-values.yaml', []], ['existing-secrets-values.yaml', []]] as const) {
    const r = await helm(['install', 'tt', CHART, '-n', 'render', '--dry-run=client', '-f', path.join(CHART, 'ci', values), ...extra]);
    t.equal(r.code, 0, r.stderr);
    const notes = r.stdout.slice(r.stdout.indexOf('NOTES:'));
    t.match(notes, "KEY=$(kubectl -n render exec deployment/tt-policy -- tintype keys create --plan free --name first | sed -n 's/^secret: //p')");
    t.match(notes, /\/v1\/ping -H "authorization: Bearer \$KEY"/);
    t.match(notes, 'helm test tt -n render');
    // Usage is read inside a policy pod, never through a port (docs/operations.md "Reading usage").
    const policy: any = (await render(values, [...extra])).find((o) => o.kind === 'Deployment' && o.metadata.name === 'tt-policy');
    const dataDir = policy.spec.template.spec.containers[0].env.find((e: any) => e.name === 'TINTYPE_DATA_DIR').value;
    t.notMatch(notes, /port-forward deployment\/tt-policy/);
    t.match(notes, `on the admin socket ${dataDir}/admin.sock`);
    t.match(notes, 'kubectl -n render exec deployment/tt-policy -- tintype usage --month YYYY-MM');
  }
});

t.test('the switches render valid objects too: no Envoy (bring your own edge), no NetworkPolicies', async (t) => {
  for (const extra of [['--set', 'envoy.enabled=false'], ['--set', 'networkPolicy.enabled=false,tests.enabled=false']]) {
    const objects = await render('existing-secrets-values.yaml', extra);
    for (const o of objects.filter(isBuiltIn)) t.same(await k8sErrors(o), [], `${extra[1]}: ${o.kind}/${o.metadata.name}`);
    if (extra[1] === 'envoy.enabled=false') t.notOk(objects.some((o) => o.metadata.name.includes('envoy')), 'nothing of Envoy is left');
    else t.notOk(objects.some((o) => o.kind === 'NetworkPolicy'));
  }
});
