/**
 * Chart.yaml's Artifact Hub annotations (docs/helm.md, "The chart's README and Artifact Hub"):
 * each is the YAML Artifact Hub reads, its change kinds are Artifact Hub's, the image it lists is
 * the Envoy image values.yaml runs, and the CRD it lists is the one crds/ installs.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { parse } from 'yaml';
import { CHART } from '../helm.ts';

/* eslint-disable @typescript-eslint/no-explicit-any */

const chart = parse(readFileSync(path.join(CHART, 'Chart.yaml'), 'utf8')) as any;
const a: Record<string, string> = chart.annotations ?? {};
const values = parse(readFileSync(path.join(CHART, 'values.yaml'), 'utf8')) as any;

t.test('changes: a list of Artifact Hub kinds with descriptions', async (t) => {
  const changes = parse(a['artifacthub.io/changes'] ?? '') as any[];
  t.ok(Array.isArray(changes) && changes.length > 0, 'this version has changes');
  for (const c of changes) {
    t.ok(['added', 'changed', 'deprecated', 'removed', 'fixed', 'security'].includes(c.kind), `kind ${c.kind}`);
    t.ok(typeof c.description === 'string' && c.description.length > 0, 'a description');
  }
  t.match(readFileSync(path.join(CHART, 'UPGRADING.md'), 'utf8'), `## ${chart.version}\n`, 'UPGRADING.md has this version\'s section');
});

t.test("images: Envoy's, as values.yaml runs it", async (t) => {
  const images = parse(a['artifacthub.io/images'] ?? '') as any[];
  const e = values.envoy.image;
  t.same(images, [{ name: 'envoy', image: `${e.repository}:${e.tag}@${e.digest}` }]);
});

t.test('the operator and its CRD, as crds/ installs it', async (t) => {
  t.equal(a['artifacthub.io/operator'], 'true');
  const crds = readdirSync(path.join(CHART, 'crds')).map((f) => parse(readFileSync(path.join(CHART, 'crds', f), 'utf8')) as any);
  const listed = parse(a['artifacthub.io/crds'] ?? '') as any[];
  t.same(listed.map((c) => [c.name, c.kind, c.version]), crds.map((c) => [c.metadata.name, c.spec.names.kind, c.spec.versions.find((v: any) => v.storage).name]));
  for (const s of ['containsSecurityUpdates', 'prerelease']) t.match(a[`artifacthub.io/${s}`], /^(true|false)$/, s);
});
