/**
 * `helm upgrade` of a release installed from the previous chart version (charts/tintype/UPGRADING.md,
 * docs/helm.md "Upgrade"), by both documented paths, rendered offline as Helm computes the values:
 *  - `--reset-then-reuse-values`: this chart's defaults, then the values the release was installed
 *    with (Helm stores them merged, as one document), then the flags given now;
 *  - `-f`: this chart's defaults, then the install's values files given again.
 * The previous revision's chart and its ci values files come from git history (chart-history.ts).
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t, { type Test } from 'tap';
import { parse, parseAllDocuments } from 'yaml';
import { CHART, helm, type K8sObject } from '../helm.ts';
import { extractChart, previousRevision } from './chart-history.ts';
import { startFakeCluster } from './fake-cluster.ts';
import { isBuiltIn, k8sErrors } from './k8s-schema.ts';

/* eslint-disable @typescript-eslint/no-explicit-any */
const previous = previousRevision();
const previousChart = extractChart(previous.commit);
const installs = readdirSync(path.join(previousChart, 'ci')).filter((f) => f.endsWith('.yaml')).sort();

async function upgrade(values: string[], flags: string[]): Promise<K8sObject[]> {
  const args = ['template', 'tt', CHART, '--namespace', 'render', '--kube-version', '1.35.0', ...values.flatMap((v) => ['-f', v]), ...flags];
  const r = await helm(args);
  if (r.code !== 0) throw new Error(`helm ${args.join(' ')}: ${r.stderr}`);
  return parseAllDocuments(r.stdout).map((d) => d.toJS() as K8sObject | null).filter((o): o is K8sObject => o !== null);
}

async function valid(t: Test, objects: K8sObject[]): Promise<void> {
  t.ok(objects.length > 20, `${objects.length} objects`);
  for (const o of objects.filter(isBuiltIn)) t.same(await k8sErrors(o), [], `${o.kind}/${o.metadata.name}`);
  const containers = objects.flatMap((o: any) => o.spec?.template?.spec?.containers ?? []).filter((c: any) => c.image.includes('/tintype'));
  // Envoy's drain helper keeps the chart's appVersion: a new tintype tag does not roll the edge.
  const images = containers.filter((c: any) => c.name !== 'drain').map((c: any) => c.image as string);
  t.ok(images.length > 0 && images.every((i) => /:NEW$/.test(i)), `the new tag everywhere: ${[...new Set(images)].join(', ')}`);
  for (const c of containers.filter((c: any) => c.name === 'drain')) t.notMatch(c.image, /:NEW$/, `Envoy's drain helper: ${c.image}`);
}

t.test(`the previous revision is a chart of another version`, async (t) => {
  t.ok(installs.length > 0, `${previous.commit.slice(0, 12)} (${previous.version}) has ci values files: ${installs.join(', ')}`);
});

/**
 * What UPGRADING.md asks of an upgrade to this version beyond the new tag: a release whose values
 * make the Secret gives the render token key and the renderer token (0.3.0); one with an existing
 * Secret adds them there.
 */
function asked(file: string): string[] {
  const values = parse(readFileSync(file, 'utf8')) as { secrets?: { existingSecret?: string; rendererToken?: string; guardTokenKey?: string } };
  if (values.secrets?.existingSecret) return [];
  return [
    ...(values.secrets?.rendererToken ? [] : ['--set', `secrets.rendererToken=${'t'.repeat(43)}`]),
    ...(values.secrets?.guardTokenKey ? [] : ['--set', `secrets.guardTokenKey=${Buffer.alloc(32, 7).toString('base64')}`]),
  ];
}

for (const install of installs) {
  const file = path.join(previousChart, 'ci', install);

  t.test(`from ${previous.version} installed with ci/${install}: helm upgrade --reset-then-reuse-values --set image.tag=NEW`, async (t) => {
    // What Helm stored as the release's values: the install's files merged into one document.
    const stored = path.join(path.dirname(previousChart), `stored-${install}.json`);
    writeFileSync(stored, JSON.stringify(parse(readFileSync(file, 'utf8'))));
    await valid(t, await upgrade([stored], ['--set', 'image.tag=NEW', ...asked(file)]));
  });

  t.test(`from ${previous.version} installed with ci/${install}: helm upgrade -f (the install's file again) --set image.tag=NEW`, async (t) => {
    await valid(t, await upgrade([file], ['--set', 'image.tag=NEW', ...asked(file)]));
  });
}

t.test('a value set to null by the install falls back to nothing the schema requires (Helm drops null values)', async (t) => {
  const first = path.join(previousChart, 'ci', installs[0]!);
  const objects = await upgrade([first], ['--set', 'image.tag=NEW', ...asked(first), '--set', 'envoy.resources.limits.cpu=null']);
  const envoy: any = objects.find((o) => o.kind === 'Deployment' && o.metadata.name === 'tt-envoy');
  t.equal(envoy.spec.template.spec.containers[0].resources.limits.cpu, undefined, 'no CPU limit');
});

t.test('an existing Secret that lacks keys this version reads fails helm upgrade, naming them (the cluster read as Helm reads it)', async (t) => {
  const dir = path.dirname(previousChart);
  const cluster = await startFakeCluster(path.join(dir, 'kubeconfig.json'));
  t.teardown(() => cluster.close());
  const upgradeWith = () => helm([
    'template', 'tt', CHART, '--namespace', 'render', '--dry-run=server', '--disable-openapi-validation', '--kubeconfig', cluster.kubeconfig,
    '-f', path.join(CHART, 'ci/existing-secrets-values.yaml'),
  ]);
  const absent = await upgradeWith();
  t.equal(absent.code, 0, `no Secret yet (made after the install): nothing to compare. ${absent.stderr}`);

  // The Secret of a release made before the lease key pair: an HMAC secret, no key pair.
  cluster.putSecret('render', 'tintype-env', { DATABASE_URL: 'postgres://db/tintype', REDIS_URL: 'redis://cache', TINTYPE_LEASE_SECRET: 'hmac' });
  cluster.putSecret('render', 'tintype-tls', { 'tls.crt': 'c' });
  const lacking = await upgradeWith();
  t.not(lacking.code, 0);
  t.match(lacking.stderr, /the Secret tintype-env \(secrets\.existingSecret\) lacks TINTYPE_LEASE_SIGNING_KEY, TINTYPE_LEASE_PUBLIC_KEYS, GUARD_TOKEN_KEY, TINTYPE_RENDERER_TOKEN, which chart \d+\.\d+\.\d+ reads: add them/);

  cluster.putSecret('render', 'tintype-env', { DATABASE_URL: 'postgres://db/tintype', REDIS_URL: 'redis://cache', TINTYPE_LEASE_SIGNING_KEY: 'k', TINTYPE_LEASE_PUBLIC_KEYS: 'p', GUARD_TOKEN_KEY: 'g', TINTYPE_RENDERER_TOKEN: 't' });
  const tls = await upgradeWith();
  t.match(tls.stderr, /the Secret tintype-tls \(tls\.existingSecret\) lacks tls\.key/);

  cluster.putSecret('render', 'tintype-tls', { 'tls.crt': 'c', 'tls.key': 'k' });
  const complete = await upgradeWith();
  t.equal(complete.code, 0, complete.stderr);
  t.match(complete.stdout, /checksum\/secret: [0-9a-f]{64}/, 'read from the cluster');
});
