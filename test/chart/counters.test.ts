/**
 * Policy's counters on Redis (docs/helm.md "The meter on Redis"): policy.counters.store gives
 * policy TINTYPE_COUNTERS_URL from the release's Secret (its own URL, or the cache's REDIS_URL)
 * and opens its egress to that Redis and nothing more; no other role, nor the migration Job
 * (`tintype migrate` touches PostgreSQL alone), is given either. policy.ledgerMonths is
 * TINTYPE_LEDGER_MONTHS. The URL schemes the store takes are checked by the schema.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { CHART, helm, named, NAMESPACE, ofKind, render, RELEASE, type K8sObject } from '../helm.ts';
import { allowed, type Endpoint } from './network-policy-eval.ts';
import { startFakeCluster } from './fake-cluster.ts';

/* eslint-disable @typescript-eslint/no-explicit-any */
const HERE = { 'kubernetes.io/metadata.name': NAMESPACE };
const role = (component: string, ip: string): Endpoint => ({
  labels: { 'app.kubernetes.io/name': 'tintype', 'app.kubernetes.io/instance': RELEASE, 'app.kubernetes.io/component': component },
  namespace: HERE,
  ip,
});
const policy = role('policy', '10.1.0.2');
const renderer = role('renderer', '10.1.0.3');
const guard = role('guard', '10.1.0.4');
const migrate = role('migrate', '10.1.0.14');
const cache: Endpoint = { labels: { 'app.kubernetes.io/name': 'redis', 'app.kubernetes.io/instance': 'cache' }, namespace: HERE, ip: '10.1.0.11' };
const counters: Endpoint = { labels: { 'app.kubernetes.io/name': 'redis', 'app.kubernetes.io/instance': 'counters' }, namespace: HERE, ip: '10.1.0.15' };
const countersElsewhere: Endpoint = { ...counters, namespace: { 'kubernetes.io/metadata.name': 'another-team' }, ip: '10.6.0.1' };
const stranger: Endpoint = { labels: { app: 'shop' }, namespace: HERE, ip: '10.1.0.9' };
const addr = (ip: string): Endpoint => ({ ip });

const URL = 'redis://policy:counters-pw@counters:6379/0';
/**
 * policy.counters.store redis with its own URL; both Redis selectors narrowed by instance, as
 * docs/helm.md says, since renderers reach any pod the cache's selector picks.
 */
const OWN = ['--set', 'policy.counters.store=redis', '--set', `secrets.countersUrl=${URL}`,
  '--set', 'networkPolicy.counters.podSelector.matchLabels.app\\.kubernetes\\.io/instance=counters',
  '--set', 'networkPolicy.redis.podSelector.matchLabels.app\\.kubernetes\\.io/instance=cache'];

const deployment = (objects: K8sObject[], r: string): any => named(objects, 'Deployment', `${RELEASE}-${r}`);
const container = (objects: K8sObject[], r: string): any => deployment(objects, r).spec.template.spec.containers[0];
const envVar = (c: any, name: string): any => (c.env ?? []).find((e: any) => e.name === name);
/** Every container of every workload (the Job's included) that is given `name`. */
const holders = (objects: K8sObject[], name: string): string[] => objects.flatMap((o: any) =>
  (o.spec?.template?.spec?.containers ?? []).filter((c: any) => envVar(c, name) !== undefined).map((c: any) => `${o.kind}/${o.metadata.name}/${c.name}`));

t.test('default: the counters stay in PostgreSQL; nothing names a counters URL, policy reaches no Redis', async (t) => {
  const objects = await render('default-values.yaml');
  t.same(holders(objects, 'TINTYPE_COUNTERS_URL'), []);
  t.same(holders(objects, 'TINTYPE_LEDGER_MONTHS'), [], 'every month kept');
  t.notOk('TINTYPE_COUNTERS_URL' in (named(objects, 'Secret', `${RELEASE}-env`) as any).stringData);
  const policies = ofKind(objects, 'NetworkPolicy');
  t.notOk(allowed(policies, HERE, policy, cache, 6379), 'policy does not reach the cache');
});

t.test('store redis: its own URL in the Secret, read by policy alone; a change of it rolls policy alone', async (t) => {
  const objects = await render('default-values.yaml', OWN);
  const secret: any = named(objects, 'Secret', `${RELEASE}-env`);
  t.equal(secret.stringData.TINTYPE_COUNTERS_URL, URL);
  t.same(envVar(container(objects, 'policy'), 'TINTYPE_COUNTERS_URL').valueFrom.secretKeyRef, { name: `${RELEASE}-env`, key: 'TINTYPE_COUNTERS_URL' });
  t.same(holders(objects, 'TINTYPE_COUNTERS_URL'), [`Deployment/${RELEASE}-policy/policy`], 'no renderer, guard, browser, Envoy or migration Job');
  t.ok(envVar(container(objects, 'policy'), 'DATABASE_URL'), 'beside DATABASE_URL: keys and the ledger stay in PostgreSQL');

  const sum = (o: K8sObject[], r: string): string => deployment(o, r).spec.template.metadata.annotations['checksum/secret'];
  const other = await render('default-values.yaml', [...OWN, '--set', 'secrets.countersUrl=redis://policy:rotated@counters:6379/0']);
  t.not(sum(other, 'policy'), sum(objects, 'policy'), 'a new counters URL rolls policy');
  t.equal(sum(other, 'renderer'), sum(objects, 'renderer'), 'not the renderers');
  t.equal(sum(other, 'guard'), sum(objects, 'guard'), 'nor the guards');
});

t.test("store redis: policy's egress reaches the counters' Redis on its ports, and nothing else is opened", async (t) => {
  const policies = ofKind(await render('default-values.yaml', [...OWN, '--set-json', 'networkPolicy.counters.ports=[6379,26379]']), 'NetworkPolicy');
  const may = (from: Endpoint, to: Endpoint, port: number) => allowed(policies, HERE, from, to, port);
  t.ok(may(policy, counters, 6379), 'the counters Redis');
  t.ok(may(policy, counters, 26379), 'and its Sentinels (a port of networkPolicy.counters.ports)');
  t.notOk(may(policy, counters, 6380), 'no other port');
  t.notOk(may(policy, cache, 6379), "not the cache's Redis, which the selector tells apart");
  t.notOk(may(policy, countersElsewhere, 6379), "not a look-alike in another namespace: the release's by default");
  for (const to of [stranger, addr('10.0.0.1'), addr('93.184.215.14')]) t.notOk(may(policy, to, 6379), `not ${to.ip}`);
  t.notOk(may(renderer, counters, 6379), 'a renderer (and Chromium beside it) does not reach the counters');
  t.notOk(may(guard, counters, 6379), 'nor the guard');
  t.notOk(may(migrate, counters, 6379), 'nor the migration Job');
  t.ok(may(renderer, cache, 6379), 'the renderers keep their cache');
  const loose = ofKind(await render('default-values.yaml', ['--set', 'policy.counters.store=redis', '--set', `secrets.countersUrl=${URL}`]), 'NetworkPolicy');
  t.ok(allowed(loose, HERE, renderer, counters, 6379), "control: with the cache's default selector (any Redis by name) renderers reach it, which is why both are narrowed");

  const managed = ofKind(await render('default-values.yaml', [...OWN, '--set-json', 'networkPolicy.counters.cidrs=["10.40.0.0/28"]']), 'NetworkPolicy');
  t.ok(allowed(managed, HERE, policy, addr('10.40.0.5'), 6379), 'a managed Redis by its address range');
  t.notOk(allowed(managed, HERE, policy, counters, 6379), 'cidrs replace the selectors');
  t.notOk(allowed(managed, HERE, policy, addr('10.40.0.17'), 6379), 'outside the range: no');
});

t.test("store cache: policy reads REDIS_URL as its counters URL and reaches the cache's Redis", async (t) => {
  const objects = await render('default-values.yaml', ['--set', 'policy.counters.store=cache']);
  t.same(envVar(container(objects, 'policy'), 'TINTYPE_COUNTERS_URL').valueFrom.secretKeyRef, { name: `${RELEASE}-env`, key: 'REDIS_URL' });
  t.notOk('TINTYPE_COUNTERS_URL' in (named(objects, 'Secret', `${RELEASE}-env`) as any).stringData, 'no second copy of the URL');
  const policies = ofKind(objects, 'NetworkPolicy');
  t.ok(allowed(policies, HERE, policy, cache, 6379));
  t.notOk(allowed(policies, HERE, policy, stranger, 6379));
  t.notOk(allowed(policies, HERE, migrate, cache, 6379), 'the migration Job still reaches PostgreSQL alone');
  const sum = (o: K8sObject[]): string => deployment(o, 'policy').spec.template.metadata.annotations['checksum/secret'];
  const rotated = await render('default-values.yaml', ['--set', 'policy.counters.store=cache', '--set', 'secrets.redisUrl=redis://tintype-cache:other@redis:6379/0']);
  t.not(sum(rotated), sum(objects), 'REDIS_URL now rolls policy too');
});

t.test('with secrets.existingSecret: the key TINTYPE_COUNTERS_URL of that Secret', async (t) => {
  const objects = await render('existing-secrets-values.yaml', ['--set', 'policy.counters.store=redis']);
  t.same(envVar(container(objects, 'policy'), 'TINTYPE_COUNTERS_URL').valueFrom.secretKeyRef, { name: 'tintype-env', key: 'TINTYPE_COUNTERS_URL' });
});

t.test('an existing Secret without TINTYPE_COUNTERS_URL fails the upgrade that turns the store on, naming the key', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tintype-counters-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const cluster = await startFakeCluster(path.join(dir, 'kubeconfig.json'));
  t.teardown(() => cluster.close());
  const upgrade = (store: string) => helm(['template', RELEASE, CHART, '--namespace', 'render', '--dry-run=server', '--disable-openapi-validation',
    '--kubeconfig', cluster.kubeconfig, '-f', path.join(CHART, 'ci/existing-secrets-values.yaml'), '--set', `policy.counters.store=${store}`]);
  const keys = { DATABASE_URL: 'postgres://db/tintype', REDIS_URL: 'redis://cache', TINTYPE_LEASE_SIGNING_KEY: 'k', TINTYPE_LEASE_PUBLIC_KEYS: 'p', GUARD_TOKEN_KEY: 'g', TINTYPE_RENDERER_TOKEN: 't' };
  cluster.putSecret('render', 'tintype-env', keys);
  cluster.putSecret('render', 'tintype-tls', { 'tls.crt': 'c', 'tls.key': 'k' });
  const lacking = await upgrade('redis');
  t.not(lacking.code, 0);
  t.match(lacking.stderr, /the Secret tintype-env \(secrets\.existingSecret\) lacks TINTYPE_COUNTERS_URL, which chart/);
  const onCache = await upgrade('cache');
  t.equal(onCache.code, 0, `the cache's store reads REDIS_URL, which the Secret has. ${onCache.stderr}`);
  cluster.putSecret('render', 'tintype-env', { ...keys, TINTYPE_COUNTERS_URL: 'redis://counters' });
  const complete = await upgrade('redis');
  t.equal(complete.code, 0, complete.stderr);
});

t.test('what the chart cannot run is refused at render, saying what to set', async (t) => {
  const template = (args: string[]) => helm(['template', RELEASE, CHART, '-f', path.join(CHART, 'ci/default-values.yaml'), ...args]);
  const noUrl = await template(['--set', 'policy.counters.store=redis']);
  t.not(noUrl.code, 0);
  t.match(noUrl.stderr, /policy\.counters\.store is redis: set secrets\.countersUrl/);
  const unused = await template(['--set', `secrets.countersUrl=${URL}`]);
  t.not(unused.code, 0, 'a URL the store does not read');
  t.match(unused.stderr, /secrets\.countersUrl is read only with policy\.counters\.store redis/);
  const both = await helm(['template', RELEASE, CHART, '-f', path.join(CHART, 'ci/existing-secrets-values.yaml'), '--set', 'policy.counters.store=redis', '--set', `secrets.countersUrl=${URL}`]);
  t.not(both.code, 0, 'with an existing Secret the URL belongs in it');
  t.match(both.stderr, /secrets\.countersUrl is read only/);
  const unknown = await template(['--set', 'policy.counters.store=memory']);
  t.not(unknown.code, 0);
  t.match(unknown.stderr, /policy\/counters\/store': value must be one of 'postgres', 'redis', 'cache'/);
});

t.test('the schema takes each URL form the counters store takes, and refuses others', async (t) => {
  const accepted = [
    'redis://counters:6379',
    'rediss://policy:pw@counters.example.com:6380/2',
    'redis+sentinel://sentinel-0:26379/counters',
    'redis+sentinel://:pw@sentinel-0:26379,sentinel-1:26379,sentinel-2:26379/counters/3',
    'rediss+sentinel://policy:pw@[fd00::1]:26379,sentinel-1.redis.svc:26379/mymaster',
    'redis+cluster://node-0:6379,node-1:6379,node-2:6379',
    'rediss+cluster://policy:pw@node-0.redis:6379',
  ];
  const refused = [
    'http://counters:6379',
    'postgres://db/tintype',
    'redis+sentinel://sentinel-0:26379',
    'redis+sentinel://sentinel-0/counters',
    'redis+sentinel://sentinel-0:26379/counters/db',
    'redis+cluster://node-0:6379/0',
    'redis+cluster://node-0',
    'redis+cluster://node-0:6379,,node-1:6379',
    'rediss+memory://node-0:6379',
  ];
  for (const url of accepted) {
    const r = await helm(['template', RELEASE, CHART, '-f', path.join(CHART, 'ci/default-values.yaml'), ...OWN, '--set', `secrets.countersUrl=${url.replaceAll(',', '\\,')}`]);
    t.equal(r.code, 0, `${url}: ${r.stderr}`);
  }
  for (const url of refused) {
    const r = await helm(['template', RELEASE, CHART, '-f', path.join(CHART, 'ci/default-values.yaml'), ...OWN, '--set', `secrets.countersUrl=${url.replaceAll(',', '\\,')}`]);
    t.not(r.code, 0, url);
    t.match(r.stderr, /countersUrl/, `${url}: refused by the schema, naming the value`);
  }
});

t.test('policy.ledgerMonths is TINTYPE_LEDGER_MONTHS (policy alone), a whole number from 1 to 1200', async (t) => {
  const objects = await render('default-values.yaml', ['--set', 'policy.ledgerMonths=13']);
  t.same(envVar(container(objects, 'policy'), 'TINTYPE_LEDGER_MONTHS'), { name: 'TINTYPE_LEDGER_MONTHS', value: '13' });
  t.same(holders(objects, 'TINTYPE_LEDGER_MONTHS'), [`Deployment/${RELEASE}-policy/policy`], 'the replicas drop the months; the Job migrates only');
  for (const bad of ['0', '1201', '1.5', 'all']) {
    const r = await helm(['template', RELEASE, CHART, '-f', path.join(CHART, 'ci/default-values.yaml'), '--set', `policy.ledgerMonths=${bad}`]);
    t.not(r.code, 0, bad);
    t.match(r.stderr, /ledgerMonths/);
  }
});

t.test("NOTES warns while the cache's selector also picks the counters' Redis, and not once it is narrowed", async (t) => {
  const notes = async (args: string[]): Promise<string> => {
    const r = await helm(['install', RELEASE, CHART, '-n', NAMESPACE, '--dry-run=client', '-f', path.join(CHART, 'ci/default-values.yaml'), ...args]);
    t.equal(r.code, 0, r.stderr);
    return r.stdout.slice(r.stdout.indexOf('NOTES:'));
  };
  const warning = /WARNING: networkPolicy\.redis\.podSelector also picks the pods networkPolicy\.counters\.podSelector/;
  const loose = await notes(['--set', 'policy.counters.store=redis', '--set', `secrets.countersUrl=${URL}`]);
  t.match(loose, warning);
  t.match(loose, /Counters \(policy\): +pods app\.kubernetes\.io\/name=redis in namespace render, ports 6379/, 'where the counters are looked for');
  t.notMatch(await notes(OWN), warning);
  t.notMatch(await notes([]), warning, 'no counters store: nothing to say');
});
