/**
 * What a platform team needs of the chart beyond the roles' own wiring (docs/helm.md): names
 * within Kubernetes' limits for any release name, one controller per release in a namespace,
 * replicas rendered only while the chart owns them, the knobs every chart offers per role,
 * limits derived so the process gives way before the OOM killer, and Envoy listening and
 * answering as the roles do.
 */
import t from 'tap';
import { isBuiltIn, k8sErrors } from './k8s-schema.ts';
import { CHART, helm, named, ofKind, render, RELEASE, type K8sObject } from '../helm.ts';
import { TEST_LEASE_ENV } from '../lib/leases.ts';
import { renderedEnvoy } from '../envoy/rendered.ts';
import { walkBootstrap } from '../envoy/proto-walk.ts';

/* eslint-disable @typescript-eslint/no-explicit-any */
const deployment = (objects: K8sObject[], role: string): any => objects.find((o) => o.kind === 'Deployment' && o.metadata.name.endsWith(`-${role}`));
const envOf = (c: any): Record<string, string> => Object.fromEntries((c.env ?? []).filter((e: any) => e.value !== undefined).map((e: any) => [e.name, e.value]));

t.test('every object name and label value is at most 63 characters, for the longest release name Helm allows', async (t) => {
  const long = 'a-release-name-of-fifty-three-characters-for-the-test'; // Helm refuses more than 53
  t.equal(long.length, 53);
  for (const values of [path('operator-scaling-values.yaml'), path('monitoring-values.yaml')]) {
    const r = await helm(['template', long, CHART, '--namespace', 'render', ...['--api-versions', 'monitoring.coreos.com/v1/ServiceMonitor', '--api-versions', 'monitoring.coreos.com/v1/PrometheusRule'], '-f', values]);
    t.equal(r.code, 0, r.stderr);
    const objects = (await import('yaml')).parseAllDocuments(r.stdout).map((d) => d.toJS()).filter((o: any) => o !== null) as K8sObject[];
    t.ok(objects.length > 20);
    const names = objects.map((o) => `${o.kind}/${o.metadata.name}`);
    t.equal(new Set(names).size, names.length, 'names stay distinct once cut');
    for (const o of objects) {
      t.ok(o.metadata.name.length <= 63, `${o.kind}/${o.metadata.name}: ${o.metadata.name.length}`);
      for (const [k, v] of Object.entries(o.metadata.labels ?? {})) t.ok(String(v).length <= 63, `${o.metadata.name}: label ${k}`);
    }
    for (const o of objects.filter(isBuiltIn)) t.same(await k8sErrors(o), [], `${o.kind}/${o.metadata.name}`);
  }
});

function path(values: string): string {
  return `${CHART}/ci/${values}`;
}

t.test('the controller leads and scales its own release: a Lease and a pool per release, in its Role', async (t) => {
  const leases = [];
  for (const release of ['one', 'two']) {
    const r = await helm(['template', release, CHART, '-n', 'render', '-f', path('operator-scaling-values.yaml')]);
    t.equal(r.code, 0, r.stderr);
    const objects = (await import('yaml')).parseAllDocuments(r.stdout).map((d) => d.toJS()).filter((o: any) => o !== null) as any[];
    const c = deployment(objects, 'controller').spec.template.spec.containers[0];
    const env = envOf(c);
    const pool = objects.find((o) => o.kind === 'RenderPool');
    t.equal(env['TINTYPE_CONTROLLER_POOL'], pool.metadata.name, 'its own RenderPool only');
    const role = objects.find((o) => o.kind === 'Role');
    const leaseRule = role.rules.find((x: any) => x.resources.includes('leases') && x.resourceNames);
    t.same(leaseRule.resourceNames, [env['TINTYPE_CONTROLLER_LEASE']], 'its Role names its own Lease');
    const statusRule = role.rules.find((x: any) => x.resources.includes('renderpools/status'));
    t.same(statusRule.resourceNames, [pool.metadata.name], "and writes its own pool's status only");
    leases.push(env['TINTYPE_CONTROLLER_LEASE']);
  }
  t.not(leases[0], leases[1], 'two releases in one namespace hold two Leases');
});

t.test('renderer replicas are rendered only while the chart owns them (GitOps and the operator never fight)', async (t) => {
  const off = deployment(await render('default-values.yaml', ['--set', 'renderer.replicas=6']), 'renderer');
  t.equal(off.spec.replicas, 6, 'the chart owns them: renderer.replicas');
  // The controller scales them: a replicas field here would reset its count on every sync of a
  // GitOps tool and every helm upgrade (docs/helm.md, "GitOps").
  const on = deployment(await render('default-values.yaml', ['--set', 'renderer.replicas=6,controller.enabled=true']), 'renderer');
  t.notOk('replicas' in on.spec, 'controller on: no replicas');
  // An HPA or KEDA of the operator's: null says so.
  const none = deployment(await render('default-values.yaml', ['--set', 'renderer.replicas=null']), 'renderer');
  t.notOk('replicas' in none.spec, 'renderer.replicas null: no replicas');
  t.notOk(deployment(await render('operator-scaling-values.yaml'), 'renderer').spec.replicas, 'the operator-scaling ci file: none either');
});

t.test('global.imageRegistry and global.imagePullSecrets reach every image and every pod (Envoy included)', async (t) => {
  const set = ['--set', 'global.imageRegistry=mirror.example:5000,global.imagePullSecrets[0]=mirror-pull,imagePullSecrets[0].name=own'];
  for (const values of ['default-values.yaml', 'operator-scaling-values.yaml']) {
    const objects = await render(values, set);
    const pods = objects.flatMap((o: any) => (o.kind === 'Pod' ? [o.spec] : o.spec?.template?.spec ? [o.spec.template.spec] : []));
    t.ok(pods.length >= 6, `${values}: ${pods.length} pods`);
    for (const pod of pods) {
      t.same(pod.imagePullSecrets, [{ name: 'own' }, { name: 'mirror-pull' }], `${values}: ${pod.containers[0].name} pulls with both`);
      for (const c of pod.containers) t.match(c.image, /^mirror\.example:5000\/(tintype-(core|renderer|controller|browser)|envoyproxy\/envoy):/, `${values}: ${c.name}: ${c.image}`);
    }
  }
  const bare = await render('default-values.yaml', ['--set', 'global.imageRegistry=mirror.example,image.repository=tintype']);
  t.match((bare.find((o: any) => o.kind === 'Deployment' && o.metadata.name === 'tt-policy') as any).spec.template.spec.containers[0].image, /^mirror\.example\/tintype-core:/, 'a repository without a registry gets it in front');
});

t.test('global values are accepted (the chart as a dependency of an umbrella chart)', async (t) => {
  const r = await helm(['template', 'tt', CHART, '-f', path('default-values.yaml'), '--set', 'global.imageRegistry=r.example,global.anything.deep=1']);
  t.equal(r.code, 0, r.stderr);
});

t.test('per role: pod annotations and labels, placement, priority, extra variables, service account annotations', async (t) => {
  for (const role of ['envoy', 'policy', 'renderer', 'guard', 'controller']) {
    const sets = [
      `${role}.podAnnotations.team=render`, `${role}.podLabels.cost-center=r1`, `${role}.podLabels.app\\.kubernetes\\.io/component=evil`,
      `${role}.nodeSelector.pool=render`, `${role}.tolerations[0].key=dedicated`, `${role}.tolerations[0].operator=Exists`,
      `${role}.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key=zone`,
      `${role}.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator=Exists`,
      `${role}.topologySpreadConstraints[0].maxSkew=1`, `${role}.topologySpreadConstraints[0].topologyKey=topology.kubernetes.io/zone`,
      `${role}.topologySpreadConstraints[0].whenUnsatisfiable=DoNotSchedule`,
      `${role}.priorityClassName=render-critical`, `${role}.extraEnv[0].name=EXTRA`, `${role}.extraEnv[0].value=one`,
      `${role}.serviceAccount.annotations.iam\\.gke\\.io/gcp-service-account=render@p.iam`,
      'controller.enabled=true',
    ];
    const objects = await render('existing-secrets-values.yaml', ['--set', sets.join(',')]);
    const d = deployment(objects, role);
    const pod = d.spec.template;
    t.equal(pod.metadata.annotations.team, 'render', `${role}: podAnnotations`);
    t.equal(pod.metadata.labels['cost-center'], 'r1', `${role}: podLabels`);
    t.equal(pod.metadata.labels['app.kubernetes.io/component'], role, `${role}: podLabels cannot move a pod out of its selector`);
    t.same(pod.spec.nodeSelector, { pool: 'render' }, `${role}: nodeSelector`);
    t.equal(pod.spec.tolerations[0].key, 'dedicated', `${role}: tolerations`);
    t.ok(pod.spec.affinity.nodeAffinity, `${role}: affinity`);
    const spread = pod.spec.topologySpreadConstraints;
    t.ok(spread.some((c: any) => c.topologyKey === 'topology.kubernetes.io/zone'), `${role}: topologySpreadConstraints`);
    if (role !== 'controller') t.ok(spread.some((c: any) => c.topologyKey === 'kubernetes.io/hostname' && c.labelSelector.matchLabels['app.kubernetes.io/component'] === role), `${role}: spread over nodes by default`);
    t.equal(pod.spec.priorityClassName, 'render-critical', `${role}: priorityClassName`);
    t.equal(envOf(pod.spec.containers[0])['EXTRA'], 'one', `${role}: extraEnv`);
    const sa = named(objects, 'ServiceAccount', pod.spec.serviceAccountName);
    t.equal(sa.metadata.annotations?.['iam.gke.io/gcp-service-account'], 'render@p.iam', `${role}: serviceAccount.annotations`);
    for (const o of [d, sa]) t.same(await k8sErrors(o), [], `${role}: ${o.kind} valid`);
  }
});

t.test('the public Service: externalTrafficPolicy and loadBalancerSourceRanges', async (t) => {
  const objects = await render('default-values.yaml', ['--set', 'envoy.service.externalTrafficPolicy=Local,envoy.service.loadBalancerSourceRanges[0]=203.0.113.0/24']);
  const svc: any = named(objects, 'Service', `${RELEASE}-envoy`);
  t.equal(svc.spec.externalTrafficPolicy, 'Local');
  t.same(svc.spec.loadBalancerSourceRanges, ['203.0.113.0/24']);
  const plain: any = named(await render('default-values.yaml'), 'Service', `${RELEASE}-envoy`);
  t.notOk('externalTrafficPolicy' in plain.spec, "the cluster's default unless set");
});

t.test("the browser recycles before the OOM killer: browserMaxRssMb derived from the browser container's memory limit", async (t) => {
  for (const slots of [1, 2, 4]) {
    const d = deployment(await render('default-values.yaml', ['--set', `renderer.slots=${slots}`]), 'renderer');
    const containers = d.spec.template.spec.containers;
    const renderer = containers.find((c: any) => c.name === 'renderer');
    const browser = containers.find((c: any) => c.name === 'browser');
    const limit = parseInt(browser.resources.limits.memory, 10);
    const rss = Number(envOf(renderer)['TINTYPE_BROWSER_MAX_RSS_MB']);
    t.equal(limit, 160 * slots + 128, `${slots} slots: the browser container's limit is perSlotMiB × slots + shmMiB`);
    t.equal(rss, 160 * slots, `${slots} slots: the threshold is that limit less /dev/shm`);
    t.ok(rss < limit, `${rss} MB < ${limit} Mi`);
  }
  const r = await helm(['template', 'tt', CHART, '-f', path('default-values.yaml'), '--set', 'renderer.browserMaxRssMb=448']);
  t.not(r.code, 0);
  t.match(r.stderr, /renderer\.browserMaxRssMb \(448\) must stay below the browser container's memory limit \(448Mi\)/);
});

t.test("Envoy's heap and connection limits follow its values, the heap below its memory limit", async (t) => {
  const heapOf = (doc: any): number => doc.overload_manager.resource_monitors.find((m: any) => m.name === 'envoy.resource_monitors.fixed_heap').typed_config.max_heap_size_bytes;
  const connsOf = (doc: any): number => doc.overload_manager.resource_monitors.find((m: any) => m.name === 'envoy.resource_monitors.global_downstream_max_connections').typed_config.max_active_downstream_connections;
  t.equal(heapOf((await renderedEnvoy('default-values.yaml')).doc), 512 * 1048576, '80% of 640Mi');
  const big = await renderedEnvoy('default-values.yaml', ['--set', 'envoy.resources.limits.memory=2Gi,envoy.maxConnections=4096']);
  t.equal(heapOf(big.doc), Math.floor(2048 * 0.8) * 1048576, '80% of 2Gi');
  t.equal(connsOf(big.doc), 4096);
  t.same(walkBootstrap(big.doc), []);
  const r = await helm(['template', 'tt', CHART, '-f', path('default-values.yaml'), '--set', 'envoy.maxHeapMiB=700']);
  t.not(r.code, 0);
  t.match(r.stderr, /envoy\.maxHeapMiB \(700\) must stay below envoy\.resources\.limits\.memory \(640Mi\)/);
});

t.test('envoy.ipFamily: the addresses Envoy binds follow the family, auto from the edge Service (no :: on an IPv4-only node)', async (t) => {
  const rows: [string, string[], string, boolean | undefined][] = [
    ['auto, the cluster default Service', [], '0.0.0.0', undefined],
    ['auto, a dual-stack Service', ['--set', 'envoy.service.ipFamilyPolicy=PreferDualStack'], '::', true],
    ['auto, an IPv6 Service', ['--set', 'envoy.service.ipFamilies={IPv6}'], '::', false],
    ['auto, IPv4 then IPv6', ['--set', 'envoy.service.ipFamilies={IPv4,IPv6}'], '::', true],
    ['IPv4', ['--set', 'envoy.ipFamily=IPv4'], '0.0.0.0', undefined],
    ['IPv6', ['--set', 'envoy.ipFamily=IPv6'], '::', false],
    ['DualStack', ['--set', 'envoy.ipFamily=DualStack'], '::', true],
  ];
  for (const [name, extra, address, compat] of rows) {
    const { doc } = await renderedEnvoy('default-values.yaml', extra);
    t.same(walkBootstrap(doc), [], `${name}: a valid bootstrap`);
    for (const l of doc.static_resources.listeners) {
      t.equal(l.address.socket_address.address, address, `${name}: ${l.name} on ${address}`);
      t.equal(l.address.socket_address.ipv4_compat, compat, `${name}: ${l.name} ipv4_compat ${compat}`);
    }
  }
  const svc: any = named(await render('default-values.yaml', ['--set', 'envoy.service.ipFamilyPolicy=RequireDualStack,envoy.service.ipFamilies={IPv6,IPv4}']), 'Service', `${RELEASE}-envoy`);
  t.equal(svc.spec.ipFamilyPolicy, 'RequireDualStack');
  t.same(svc.spec.ipFamilies, ['IPv6', 'IPv4']);
  t.same(await k8sErrors(svc), []);
});

t.test('the OTLP collector over https: TLS to it, its name checked; its port opened', async (t) => {
  const extra = ['--set', 'telemetry.otlpEndpoint=https://otel.example.com'];
  const { doc } = await renderedEnvoy('monitoring-values.yaml', extra);
  const c = doc.static_resources.clusters.find((x: any) => x.name === 'otel_collector');
  t.equal(c.transport_socket.name, 'envoy.transport_sockets.tls');
  t.equal(c.transport_socket.typed_config.sni, 'otel.example.com');
  t.same(c.transport_socket.typed_config.common_tls_context.validation_context.match_typed_subject_alt_names, [{ san_type: 'DNS', matcher: { exact: 'otel.example.com' } }]);
  t.equal(c.load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address.port_value, 443, "the scheme's port");
  t.same(walkBootstrap(doc), []);
  const np: any = ofKind(await render('monitoring-values.yaml', extra), 'NetworkPolicy').find((p) => p.metadata.name === `${RELEASE}-envoy`);
  t.ok(np.spec.egress.some((r: any) => r.ports.some((p: any) => p.port === 443) && r.to.some((x: any) => x.podSelector?.matchLabels?.['app.kubernetes.io/name'] === 'opentelemetry-collector')));
  const plain = (await renderedEnvoy('monitoring-values.yaml')).doc.static_resources.clusters.find((x: any) => x.name === 'otel_collector');
  t.notOk('transport_socket' in plain, 'http:// stays plain');
});

t.test('every local reply Envoy writes is the spec\'s JSON: any other error is a retryable 503 busy; policy\'s 401 and 429 pass', async (t) => {
  const { doc } = await renderedEnvoy('default-values.yaml');
  const hcm = doc.static_resources.listeners[0].filter_chains[0].filters[0].typed_config;
  const lrc = hcm.local_reply_config;
  const last = lrc.mappers.at(-1);
  // Mappers match in order: the ones above take their codes; this one everything else but 401, 429.
  const cmp = (f: any): string => `${f.status_code_filter.comparison.op} ${f.status_code_filter.comparison.value.default_value}`;
  const [range, rest] = last.filter.or_filter.filters;
  t.same(range.and_filter.filters.map(cmp), ['GE 402', 'LE 428']);
  t.same(cmp(rest), 'GE 430');
  const before = lrc.mappers.slice(0, -1).map((m: any) => m.filter.status_code_filter.comparison.value.default_value);
  for (let s = 400; s < 600; s++) {
    const taken = before.includes(s) || (s >= 402 && s <= 428) || s >= 430;
    t.equal(taken, s !== 401 && s !== 429, `${s}: ${taken ? 'JSON of the spec' : "policy's own"}`);
  }
  t.equal(last.status_code, 503);
  t.same(JSON.parse(last.body.inline_string), { error: 'busy' });
  t.same(last.headers_to_add[0].header, { key: 'retry-after', value: '1' });
  t.equal(lrc.body_format.text_format_source.inline_string, '%LOCAL_REPLY_BODY%');
  t.match(lrc.body_format.content_type, /^application\/json/);
});

t.test('DNS peers are values: the cluster DNS by selector and the node-local cache by default', async (t) => {
  const policies = ofKind(await render('default-values.yaml', ['--set', 'networkPolicy.dns.cidrs[0]=10.96.0.10/32']), 'NetworkPolicy') as any[];
  for (const p of policies.filter((x) => x.spec.egress)) {
    const dns = p.spec.egress.find((r: any) => r.ports?.some((x: any) => x.port === 53 && x.protocol === 'UDP'));
    t.ok(dns.to.some((x: any) => x.ipBlock?.cidr === '10.96.0.10/32'), `${p.metadata.name}: the cidrs given`);
    t.ok(dns.to.some((x: any) => x.podSelector?.matchLabels?.['k8s-app'] === 'kube-dns'), `${p.metadata.name}: and kube-dns`);
  }
});

t.test('upgrades: migrations run once in a pre-install/pre-upgrade hook Job with their own credentials; policy waits for them', async (t) => {
  const objects = await render('default-values.yaml', ['--set', 'secrets.migrateDatabaseUrl=postgres://owner:ddl@db/tintype']);
  const job: any = ofKind(objects, 'Job')[0];
  t.equal(job.metadata.annotations['helm.sh/hook'], 'pre-install,pre-upgrade');
  const c = job.spec.template.spec.containers[0];
  t.same(c.args.slice(0, 1), ['migrate']);
  const ref = c.env.find((e: any) => e.name === 'DATABASE_URL').valueFrom.secretKeyRef;
  const secret: any = named(objects, 'Secret', ref.name);
  t.equal(secret.stringData[ref.key], 'postgres://owner:ddl@db/tintype', "the Job's own credentials");
  // Hooks run before the release's objects exist: what the Job needs is a hook made before it.
  for (const o of [secret, named(objects, 'NetworkPolicy', `${RELEASE}-migrate`)]) {
    t.equal(o.metadata.annotations['helm.sh/hook'], 'pre-install,pre-upgrade', `${o.kind}: a hook too`);
    t.ok(Number(o.metadata.annotations['helm.sh/hook-weight']) < Number(job.metadata.annotations['helm.sh/hook-weight']), `${o.kind}: before the Job`);
  }
  t.equal(job.spec.activeDeadlineSeconds, 3600 + 240, 'the Job may wait for PostgreSQL, then migrate');
  t.same(c.args, ['migrate', '--timeout-s', '3600', '--wait-s', '240'], 'a PostgreSQL not up yet is tried again for migrations.waitSeconds');
  const policy = deployment(objects, 'policy').spec.template.spec.containers[0];
  t.equal(envOf(policy)['TINTYPE_MIGRATE'], 'wait', 'policy pods wait for the schema instead of migrating');
  const existing = ofKind(await render('existing-secrets-values.yaml', ['--set', 'migrations.databaseUrlKey=DATABASE_MIGRATE_URL']), 'Job')[0] as any;
  t.same(existing.spec.template.spec.containers[0].env.find((e: any) => e.name === 'DATABASE_URL').valueFrom.secretKeyRef, { name: 'tintype-env', key: 'DATABASE_MIGRATE_URL' });
  const off = await render('default-values.yaml', ['--set', 'migrations.enabled=false']);
  t.equal(ofKind(off, 'Job').length, 0);
  t.equal(envOf(deployment(off, 'policy').spec.template.spec.containers[0])['TINTYPE_MIGRATE'], 'start', 'off: each pod migrates as it starts');
});

t.test('a Secret change rolls exactly the roles that read it (checksum per role, of its own keys)', async (t) => {
  const sums = async (set: string): Promise<Record<string, string | undefined>> => {
    const objects = await render('default-values.yaml', set === '' ? [] : ['--set', set]);
    return Object.fromEntries(['policy', 'renderer', 'guard', 'envoy'].map((r) => [r, deployment(objects, r).spec.template.metadata.annotations?.['checksum/secret']]));
  };
  const base = await sums('');
  t.ok(base['policy'] && base['renderer'] && base['guard'], 'policy, the renderer and the guard carry one');
  // Rotation's order (docs/helm.md "Rotating the lease secret"): a new public key rolls every
  // pod that verifies, a new signing key only policy, which alone signs.
  const verify = await sums(`secrets.leasePublicKeys=${TEST_LEASE_ENV.TINTYPE_LEASE_PUBLIC_KEYS}`);
  t.not(verify['policy'], base['policy'], 'a public key change rolls policy');
  t.not(verify['renderer'], base['renderer'], 'and the renderers');
  t.not(verify['guard'], base['guard'], 'and the guards, which check each render\'s lease (docs/security.md "Egress policy per key")');
  const sign = await sums(`secrets.leaseSigningKey=${TEST_LEASE_ENV.TINTYPE_LEASE_SIGNING_KEY}`);
  t.not(sign['policy'], base['policy'], 'a signing key change rolls policy');
  t.equal(sign['renderer'], base['renderer'], 'and not the renderers, which never hold it');
  t.equal(sign['guard'], base['guard'], 'nor the guards');
  const db = await sums('secrets.databaseUrl=postgres://tintype:other@postgresql:5432/tintype');
  t.not(db['policy'], base['policy'], 'DATABASE_URL rolls policy');
  t.equal(db['renderer'], base['renderer'], 'and not the renderers, which do not read it');
  const redis = await sums('secrets.redisUrl=redis://tintype-cache:other@redis:6379/0');
  t.equal(redis['policy'], base['policy'], 'REDIS_URL does not roll policy');
  t.not(redis['renderer'], base['renderer'], 'but the renderers');
  // An existing Secret is read from the cluster (lookup); helm template has none: no annotation.
  const existing = deployment(await render('existing-secrets-values.yaml'), 'policy').spec.template.metadata.annotations ?? {};
  t.notOk('checksum/secret' in existing);
});

t.test("Envoy lets go of a policy or renderer pod when the Service's DNS does, healthy or not", async (t) => {
  const { doc } = await renderedEnvoy('default-values.yaml');
  for (const name of ['policy', 'renderer']) {
    const c = doc.static_resources.clusters.find((x: any) => x.name === name);
    t.equal(c.ignore_health_on_host_removal, true, name);
    t.equal(c.type, 'STRICT_DNS', `${name}: a host leaves with the DNS answer`);
  }
});

t.test('the hook phase of the migration Job is a value: after the objects on a first install beside its own PostgreSQL', async (t) => {
  const hooks = (objects: K8sObject[]) => objects.filter((o) => o.metadata.labels?.['app.kubernetes.io/component'] === 'migrate').map((o) => `${o.kind} ${o.metadata.annotations?.['helm.sh/hook']}`).sort();
  const beside = await render('default-values.yaml', ['--set', 'migrations.hook=post-install\\,pre-upgrade,migrations.waitSeconds=600']);
  t.same(hooks(beside), ['Job post-install,pre-upgrade', 'NetworkPolicy post-install,pre-upgrade', 'Secret post-install,pre-upgrade', 'ServiceAccount post-install,pre-upgrade'], 'the Secret, ServiceAccount and NetworkPolicy it needs move with it');
  t.same((ofKind(beside, 'Job')[0] as any).spec.template.spec.containers[0].args.slice(-2), ['--wait-s', '600']);
  const r = await helm(['template', 'tt', CHART, '-f', `${CHART}/ci/default-values.yaml`, '--set', 'migrations.hook=whenever']);
  t.not(r.code, 0, 'a phase Helm does not run is refused');
  t.match(r.stderr, /migrations[./]hook/);
});
