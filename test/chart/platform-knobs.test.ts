/**
 * The knobs a platform team reaches for on the second day (docs/helm.md "The values that matter",
 * "Sizing"): pre-made ServiceAccounts, extra volumes and envFrom in every pod (the browser container
 * and the migration Job included), PodDisruptionBudgets that can be shaped or left out and never
 * block a drain, pods the cluster-autoscaler may move, requests that add up to what the docs say,
 * CPU limits left out on request, and the migration Job placed and identified as policy is. Each
 * rendered object is held to the Kubernetes API as render.test.ts does.
 */
import t, { type Test } from 'tap';
import { CHART, helm, ofKind, render, type K8sObject } from '../helm.ts';
import { isBuiltIn, k8sErrors } from './k8s-schema.ts';

/* eslint-disable @typescript-eslint/no-explicit-any */
const pods = (objects: K8sObject[]): [string, any][] => objects.flatMap((o: any): [string, any][] => (o.spec?.template?.spec ? [[`${o.kind}/${o.metadata.name}`, o.spec.template] as [string, any]] : []));
const workload = (objects: K8sObject[], kind: string, name: string): any => objects.find((o) => o.kind === kind && o.metadata.name === name);

async function valid(t: Test, objects: K8sObject[]): Promise<void> {
  for (const o of objects.filter(isBuiltIn)) t.same(await k8sErrors(o), [], `${o.kind}/${o.metadata.name}`);
}

t.test('serviceAccount.create false: the pods run as the pre-made account and the chart makes none', async (t) => {
  const objects = await render('operator-scaling-values.yaml', ['--set', 'policy.serviceAccount.create=false,policy.serviceAccount.name=db-identity,controller.serviceAccount.create=false,controller.serviceAccount.name=ops']);
  t.notOk(objects.some((o) => o.kind === 'ServiceAccount' && ['tt-policy', 'tt-controller'].includes(o.metadata.name)), 'none made for them');
  t.equal(workload(objects, 'Deployment', 'tt-policy').spec.template.spec.serviceAccountName, 'db-identity');
  t.equal(workload(objects, 'Deployment', 'tt-controller').spec.template.spec.serviceAccountName, 'ops');
  t.same((workload(objects, 'RoleBinding', 'tt-controller') as any).subjects.map((s: any) => s.name), ['ops'], "the controller's Role is bound to it");
  t.equal((ofKind(objects, 'Job')[0] as any).spec.template.spec.serviceAccountName, 'db-identity', "the migration Job runs as policy's account");
  const r = await helm(['template', 'tt', CHART, '-f', `${CHART}/ci/default-values.yaml`, '--set', 'guard.serviceAccount.create=false']);
  t.not(r.code, 0);
  t.match(r.stderr, /guard\.serviceAccount\.name: the ServiceAccount made beforehand/);
});

t.test('extraVolumes, extraVolumeMounts and extraEnvFrom reach every role, the browser container and the migration Job', async (t) => {
  const set: string[] = [];
  const roles = ['envoy', 'policy', 'renderer', 'guard', 'controller', 'migrations'];
  for (const r of roles) {
    set.push('--set', `${r}.extraVolumes[0].name=ca,${r}.extraVolumes[0].secret.secretName=db-ca`);
    set.push('--set', `${r}.extraVolumeMounts[0].name=ca,${r}.extraVolumeMounts[0].mountPath=/etc/ssl/db,${r}.extraVolumeMounts[0].readOnly=true`);
    set.push('--set', `${r}.extraEnvFrom[0].secretRef.name=${r}-extra`);
  }
  set.push('--set', 'renderer.browser.extraVolumeMounts[0].name=ca,renderer.browser.extraVolumeMounts[0].mountPath=/etc/ssl/db');
  const objects = await render('operator-scaling-values.yaml', set);
  const seen = pods(objects);
  t.equal(seen.length, 6, seen.map(([n]) => n).join(', '));
  for (const [name, tpl] of seen) {
    t.ok(tpl.spec.volumes.some((v: any) => v.name === 'ca' && v.secret.secretName === 'db-ca'), `${name}: the volume`);
    const main = tpl.spec.containers[0];
    t.ok(main.volumeMounts.some((m: any) => m.name === 'ca' && m.mountPath === '/etc/ssl/db'), `${name}: ${main.name} mounts it`);
    t.match(main.envFrom?.[0]?.secretRef?.name ?? '', /-extra$/, `${name}: ${main.name} envFrom`);
  }
  const browser = workload(objects, 'Deployment', 'tt-renderer').spec.template.spec.containers.find((c: any) => c.name === 'browser');
  t.ok(browser.volumeMounts.some((m: any) => m.name === 'ca'), 'the browser container mounts it');
  t.equal(browser.envFrom, undefined, 'and still holds no secret');
  await valid(t, objects);
});

t.test('PodDisruptionBudgets: shaped by minAvailable or maxUnavailable, switched off, and one replica never blocks a drain', async (t) => {
  const pdb = (objects: K8sObject[], role: string): any => workload(objects, 'PodDisruptionBudget', `tt-${role}`);
  const byDefault = await render('default-values.yaml');
  t.same(['envoy', 'policy', 'renderer', 'guard'].map((r) => [pdb(byDefault, r).spec.minAvailable, pdb(byDefault, r).spec.maxUnavailable]), [[1, undefined], [1, undefined], [undefined, 1], [1, undefined]]);
  const shaped = await render('default-values.yaml', ['--set', 'envoy.pdb.minAvailable=null,envoy.pdb.maxUnavailable=50%,guard.pdb.enabled=false,policy.replicas=1']);
  t.same(pdb(shaped, 'envoy').spec.maxUnavailable, '50%');
  t.equal(pdb(shaped, 'envoy').spec.minAvailable, undefined);
  t.equal(pdb(shaped, 'guard'), undefined, 'guard.pdb.enabled false: none');
  t.same([pdb(shaped, 'policy').spec.minAvailable, pdb(shaped, 'policy').spec.maxUnavailable], [undefined, 1], 'one policy replica: its pod may be evicted');
  const two = await render('default-values.yaml', ['--set', 'policy.replicas=2,policy.pdb.minAvailable=2']);
  t.same(pdb(two, 'policy').spec.maxUnavailable, 1, 'a minimum the replicas cannot exceed blocks drains: 1 may go');
  await valid(t, shaped);
  const both = await helm(['template', 'tt', CHART, '-f', `${CHART}/ci/default-values.yaml`, '--set', 'envoy.pdb.maxUnavailable=1']);
  t.not(both.code, 0, 'both shapes at once are refused');
});

t.test('the controller can run two replicas, one leading by its Lease', async (t) => {
  const objects = await render('operator-scaling-values.yaml', ['--set', 'controller.replicas=2']);
  const c = workload(objects, 'Deployment', 'tt-controller');
  t.equal(c.spec.replicas, 2);
  t.equal(c.spec.strategy, undefined, 'rolled, not recreated: the other replica takes the lease');
  const env = Object.fromEntries(c.spec.template.spec.containers[0].env.map((e: any) => [e.name, e.value]));
  t.ok(env['TINTYPE_CONTROLLER_LEASE'], 'the leader Lease');
  t.equal(workload(await render('operator-scaling-values.yaml'), 'Deployment', 'tt-controller').spec.strategy.type, 'Recreate', 'one replica alone: recreated');
});

t.test('every pod names its emptyDirs safe to evict for the cluster-autoscaler', async (t) => {
  for (const [name, tpl] of pods(await render('operator-scaling-values.yaml'))) {
    const emptyDirs = tpl.spec.volumes.filter((v: any) => v.emptyDir !== undefined).map((v: any) => v.name).sort();
    const named = (tpl.metadata.annotations?.['cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes'] ?? '').split(',').sort();
    t.same(named, emptyDirs, `${name}: ${emptyDirs.join(',')}`);
  }
});

t.test('sizing: a renderer pod requests 1 CPU, every container requests the ephemeral storage of its emptyDirs, CPU limits may be left out', async (t) => {
  const objects = await render('default-values.yaml');
  const renderer = workload(objects, 'Deployment', 'tt-renderer').spec.template.spec;
  const millis = (q: string) => (q.endsWith('m') ? Number(q.slice(0, -1)) : Number(q) * 1000);
  t.equal(renderer.containers.reduce((sum: number, c: any) => sum + millis(c.resources.requests.cpu), 0), 1000, 'the pod requests 1 CPU (docs/helm.md "Sizing")');
  for (const [name, tpl] of pods(objects)) {
    for (const c of tpl.spec.containers) t.ok(c.resources.requests['ephemeral-storage'], `${name}: ${c.name} requests ephemeral-storage`);
  }
  const unlimited = await render('default-values.yaml', ['--set', 'renderer.cpu.limit=null,renderer.browser.cpu.limit=null,policy.resources.limits.cpu=null']);
  for (const c of workload(unlimited, 'Deployment', 'tt-renderer').spec.template.spec.containers) t.equal(c.resources.limits.cpu, undefined, `renderer/${c.name}: no CPU limit`);
  t.equal(workload(unlimited, 'Deployment', 'tt-policy').spec.template.spec.containers[0].resources.limits.cpu, undefined);
  await valid(t, unlimited);
});

t.test("the migration Job is placed and labelled as policy's pods are, with policy's identity", async (t) => {
  const set = 'policy.podLabels.team=billing,policy.podAnnotations.mesh/inject=off,policy.nodeSelector.zone=db-near,policy.priorityClassName=high,policy.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key=db,policy.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator=Exists,policy.serviceAccount.annotations.iam/role=db-migrator';
  const objects = await render('default-values.yaml', ['--set', set]);
  const job: any = ofKind(objects, 'Job')[0];
  const pod = job.spec.template;
  t.equal(pod.metadata.labels.team, 'billing');
  t.equal(pod.metadata.annotations['mesh/inject'], 'off');
  t.same(pod.spec.nodeSelector, { zone: 'db-near' });
  t.equal(pod.spec.priorityClassName, 'high');
  t.equal(pod.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key, 'db');
  t.equal(pod.spec.topologySpreadConstraints, undefined, 'one pod: no spread');
  const sa: any = workload(objects, 'ServiceAccount', pod.spec.serviceAccountName);
  t.equal(sa.metadata.annotations['iam/role'], 'db-migrator', "its ServiceAccount carries policy's identity");
  t.equal(sa.metadata.annotations['helm.sh/hook'], job.metadata.annotations['helm.sh/hook'], 'made as a hook, before the Job');
  t.ok(Number(sa.metadata.annotations['helm.sh/hook-weight']) < Number(job.metadata.annotations['helm.sh/hook-weight']));
  await valid(t, objects);
});

t.test('HorizontalPodAutoscalers for Envoy and the guard, which then carry no replicas of the chart', async (t) => {
  const objects = await render('operator-scaling-values.yaml', ['--set', 'envoy.autoscaling.enabled=true,guard.autoscaling.enabled=true,guard.autoscaling.minReplicas=1,guard.autoscaling.maxReplicas=4']);
  for (const [role, min, max] of [['envoy', 2, 6], ['guard', 1, 4]] as const) {
    const hpa: any = workload(objects, 'HorizontalPodAutoscaler', `tt-${role}`);
    t.same(hpa.spec.scaleTargetRef, { apiVersion: 'apps/v1', kind: 'Deployment', name: `tt-${role}` }, `${role}: scales its Deployment`);
    t.same([hpa.spec.minReplicas, hpa.spec.maxReplicas], [min, max]);
    t.equal(hpa.spec.metrics[0].resource.target.averageUtilization, 70);
    t.notOk('replicas' in workload(objects, 'Deployment', `tt-${role}`).spec, `${role}: no replicas to reset the autoscaler's`);
  }
  t.same(workload(objects, 'PodDisruptionBudget', 'tt-guard').spec.maxUnavailable, 1, 'a minimum of one guard does not block drains');
  await valid(t, objects);
  t.equal(ofKind(await render('default-values.yaml'), 'HorizontalPodAutoscaler').length, 0, 'off by default');
});

t.test('an OTLP collector outside the cluster: its address ranges opened by every NetworkPolicy, a path kept in its URL', async (t) => {
  const objects = await render('default-values.yaml', ['--set', 'telemetry.otlpEndpoint=https://otel.example.com/tenant-a,telemetry.collectorPeer.cidrs={203.0.113.10/32}']);
  const policies = ofKind(objects, 'NetworkPolicy').filter((p: any) => p.spec.egress?.some((e: any) => e.ports?.some((port: any) => port.port === 443)));
  t.ok(policies.length >= 4, `${policies.length} NetworkPolicies reach the collector`);
  for (const p of policies as any[]) {
    const rule = p.spec.egress.find((e: any) => e.ports?.some((port: any) => port.port === 443) && e.to.some((to: any) => to.ipBlock));
    t.same(rule?.to, [{ ipBlock: { cidr: '203.0.113.10/32' } }], `${p.metadata.name}: the collector's range alone`);
  }
  const env = (workload(objects, 'Deployment', 'tt-policy').spec.template.spec.containers[0].env as any[]).find((e) => e.name === 'OTEL_EXPORTER_OTLP_ENDPOINT');
  t.equal(env.value, 'https://otel.example.com/tenant-a');
  const envoy: any = workload(objects, 'ConfigMap', 'tt-envoy');
  t.match(envoy.data['envoy.yaml'], 'uri: https://otel.example.com/tenant-a/v1/traces', "Envoy's exporter posts under the path");
  await valid(t, objects);
});
