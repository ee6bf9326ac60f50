/**
 * Every change of the chart ships under a new version (charts/tintype/UPGRADING.md): the chart in
 * the working tree, against the last merged revision, has a higher Chart.yaml version when any of
 * its files differ, and UPGRADING.md has a section for the version it carries. A new version that
 * changes nothing of a pod rolls no pod. The package ships what a release needs and nothing of CI's.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { parse, parseAllDocuments } from 'yaml';
import { CHART, helm, type K8sObject } from '../helm.ts';
import { chartChangedSince, currentVersion, lastMergedRevision, semverAbove, versionAt } from './chart-history.ts';

t.test('a chart that changed since the last merged revision carries a higher version', async (t) => {
  const base = lastMergedRevision();
  const [before, now] = [versionAt(base), currentVersion()];
  if (chartChangedSince(base)) t.ok(semverAbove(now, before), `charts/tintype changed since ${base.slice(0, 12)} (version ${before}): Chart.yaml says ${now}, bump it`);
  else t.ok(now === before || semverAbove(now, before), `unchanged since ${base.slice(0, 12)}: ${now} is not below ${before}`);
});

t.test('the version comparison reads numbers, not text', async (t) => {
  const rows: [string, string, boolean][] = [['0.2.0', '0.1.0', true], ['0.10.0', '0.9.0', true], ['0.1.0', '0.1.0', false], ['0.1.1', '0.2.0', false], ['1.0.0', '0.99.99', true]];
  for (const [a, b, above] of rows) t.equal(semverAbove(a, b), above, `${a} above ${b}: ${above}`);
});

t.test('UPGRADING.md has a section for the current version, newest first', async (t) => {
  const text = readFileSync(path.join(CHART, 'UPGRADING.md'), 'utf8');
  const versions = [...text.matchAll(/^## (\d+\.\d+\.\d+)\b/gm)].map((m) => m[1]!);
  t.equal(versions[0], currentVersion(), 'the first section is the version Chart.yaml carries');
  for (let i = 1; i < versions.length; i++) t.ok(semverAbove(versions[i - 1]!, versions[i]!), `${versions[i - 1]} above ${versions[i]}`);
});

t.test('a new chart version alone rolls no pod: pod templates carry no chart version', async (t) => {
  const copy = path.join(mkdtempSync(path.join(os.tmpdir(), 'tintype-chart-')), 'tintype');
  cpSync(CHART, copy, { recursive: true });
  const chartYaml = path.join(copy, 'Chart.yaml');
  writeFileSync(chartYaml, readFileSync(chartYaml, 'utf8').replace(/^version: .*$/m, 'version: 99.0.0'));
  const templates = async (chart: string) => {
    const r = await helm(['template', 'tt', chart, '--namespace', 'render', '-f', path.join(CHART, 'ci/default-values.yaml')]);
    t.equal(r.code, 0, r.stderr);
    const objects = parseAllDocuments(r.stdout).map((d) => d.toJS() as K8sObject | null).filter((o): o is K8sObject => o?.kind === 'Deployment');
    return new Map(objects.map((o) => [o.metadata.name, (o as unknown as { spec: { template: unknown } }).spec.template]));
  };
  const [now, bumped] = [await templates(CHART), await templates(copy)];
  t.ok(now.size >= 4, `${now.size} Deployments`);
  for (const [name, template] of now) t.same(bumped.get(name), template, `${name}: the same pod template`);
});

const CI_SIGNING_KEY = (parse(readFileSync(path.join(CHART, 'ci/default-values.yaml'), 'utf8')) as { secrets: { leaseSigningKey: string } }).secrets.leaseSigningKey;

t.test('the packaged chart ships UPGRADING.md and the schema, and leaves out ci/ (its CI-only lease key pair)', async (t) => {
  const out = mkdtempSync(path.join(os.tmpdir(), 'tintype-package-'));
  const r = await helm(['package', CHART, '--destination', out]);
  t.equal(r.code, 0, r.stderr);
  const tgz = path.join(out, `tintype-${currentVersion()}.tgz`);
  const files = execFileSync('tar', ['-tzf', tgz], { encoding: 'utf8' }).split('\n').filter((f) => f !== '');
  for (const f of ['tintype/UPGRADING.md', 'tintype/values.schema.json', 'tintype/crds/renderpools.tintype.dev.yaml', 'tintype/files/envoy.yaml']) t.ok(files.includes(f), f);
  t.same(files.filter((f) => f.startsWith('tintype/ci/')), [], 'no ci/ values file');
  t.notOk(files.some((f) => readFileSync(path.join(CHART, '..', f), 'utf8').includes(CI_SIGNING_KEY)), 'no file holds the CI signing key');
});
