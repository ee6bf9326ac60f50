/**
 * What docs/helm.md prints, held to the chart: its `helm install` and `helm upgrade` lines run as
 * `helm template` with the same arguments (helm offline, test/helm.ts), the Secrets it makes are
 * the ones the chart reads, every Deployment and Service it names (`kubectl … deployment/…`) is
 * rendered with the port it uses, every value it names exists in values.yaml, and its RenderPool
 * example matches the CRD.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { parse, parseAllDocuments } from 'yaml';
import { CHART, helm, ROOT, type K8sObject } from '../helm.ts';
import { blocksIn, readPage } from './markdown.ts';
import { joinContinuations, parseLine } from './synopsis.ts';

/* eslint-disable @typescript-eslint/no-explicit-any */
const PAGE = readPage('docs/helm.md');
const INSTALL = joinContinuations(blocksIn(PAGE, 'Install', 'sh')[0]!);

/** A printed `helm install|upgrade RELEASE charts/tintype …` as `helm template` with the same arguments. */
async function template(words: string[]): Promise<K8sObject[]> {
  const [, verb, release, chart, ...rest] = words;
  if (!['install', 'upgrade'].includes(verb!) || chart !== 'charts/tintype') throw new Error(`not a helm install or upgrade of the chart: ${words.join(' ')}`);
  const args = rest.filter((w) => w !== '--reset-then-reuse-values');
  const r = await helm(['template', release!, CHART, '--kube-version', '1.35.0', ...args]);
  if (r.code !== 0) throw new Error(`helm template ${args.join(' ')}: ${r.stderr}`);
  return parseAllDocuments(r.stdout).map((d) => d.toJS() as K8sObject | null).filter((o): o is K8sObject => o !== null);
}

function line(prefix: string): string[] {
  const found = INSTALL.find((l) => l.startsWith(prefix));
  if (found === undefined) throw new Error(`docs/helm.md "Install" has no line starting ${prefix}`);
  return parseLine(found).words;
}

const containers = (o: any): any[] => o.spec?.template?.spec?.containers ?? [];
let installed: K8sObject[] = [];
t.before(async () => {
  installed = await template(line('helm install '));
});

t.test('Install: the printed helm install renders, with the image and the Secrets it names', async (t) => {
  const deployments = installed.filter((o) => o.kind === 'Deployment') as any[];
  t.ok(deployments.length >= 4, 'every role');
  for (const d of deployments) {
    // Each role runs its image (docs/helm.md "The images"); the renderer pod's browser container `-browser`.
    for (const c of containers(d).filter((c: any) => !/envoy/.test(c.image))) t.match(c.image, c.name === 'browser' ? /^REGISTRY\/tintype-browser:/ : /^REGISTRY\/tintype-(core|renderer|controller):/, `${d.metadata.name}: image.repository`);
  }
  // The generic Secret holds exactly what the chart reads from secrets.existingSecret.
  const made = line('kubectl -n render create secret generic tintype-env').filter((w) => w.startsWith('--from-literal=')).map((w) => w.slice('--from-literal='.length).split('=')[0]!);
  const read = new Set<string>();
  for (const d of deployments) for (const c of containers(d)) for (const e of c.env ?? []) if (e.valueFrom?.secretKeyRef?.name === 'tintype-env') read.add(e.valueFrom.secretKeyRef.key);
  t.same([...read].sort(), [...made].sort(), `the chart reads ${[...read].sort().join(', ')} from tintype-env`);
  t.notOk(installed.some((o) => o.kind === 'Secret' && /env|tls/.test((o as any).metadata.name)), 'no Secret made: the existing ones are used');
  const tls = deployments.flatMap((d) => d.spec.template.spec.volumes ?? []).filter((v: any) => v.secret?.secretName === 'tintype-tls');
  t.ok(tls.length > 0, 'the edge mounts tintype-tls');
  t.ok(line('kubectl -n render create secret tls tintype-tls').length > 0);
});

t.test('every deployment/… and Service the page names is rendered, with the port it uses', async (t) => {
  const names = new Set([...PAGE.matchAll(/deployment\/(tintype-[a-z]+)/g)].map((m) => m[1]!));
  t.ok(names.size >= 2, [...names].join(', '));
  for (const name of names) t.ok(installed.some((o) => o.kind === 'Deployment' && (o as any).metadata.name === name), `Deployment ${name}`);
  for (const m of PAGE.matchAll(/the (tintype-[a-z]+) Service/g)) t.ok(installed.some((o) => o.kind === 'Service' && (o as any).metadata.name === m[1]), `Service ${m[1]}`);
  for (const m of PAGE.matchAll(/port-forward deployment\/(tintype-[a-z]+) (\d+):(\d+)/g)) {
    const d: any = installed.find((o) => o.kind === 'Deployment' && (o as any).metadata.name === m[1]);
    const ports = containers(d).flatMap((c: any) => (c.ports ?? []).map((p: any) => p.containerPort));
    t.ok(ports.includes(Number(m[3])), `${m[1]} has port ${m[3]}`);
  }
});

t.test('Upgrade: the printed helm upgrade renders the new tag; the CRD file it applies exists', async (t) => {
  const printed = /`(helm upgrade [^`]+)`/.exec(PAGE)![1]!;
  const words = parseLine(printed).words;
  // --reset-then-reuse-values keeps what the install set: the same, given again.
  const sets = line('helm install ').slice(4);
  const upgraded = await template([...words, ...sets]);
  const images = upgraded.filter((o) => o.kind === 'Deployment').flatMap((d) => containers(d).filter((c: any) => c.name !== 'drain').map((c: any) => c.image as string)).filter((i) => !/envoy/.test(i));
  // Envoy's drain helper keeps the chart's appVersion (docs/helm.md, "Rolling restarts").
  t.ok(images.length > 0 && images.every((i) => /^REGISTRY\/tintype-(core|renderer|controller|browser):NEW$/.test(i)), 'image.tag');
  for (const m of PAGE.matchAll(/kubectl apply -f (\S+)/g)) t.ok(existsSync(path.join(ROOT, m[1]!)), m[1]!);
});

/** Whether values.schema.json declares the value `name` (an optional one has no default in values.yaml). */
function declared(schema: unknown, name: string): boolean {
  let at = schema as { properties?: Record<string, unknown>; additionalProperties?: unknown } | undefined;
  for (const part of name.split('.')) {
    at = (part === '*' ? at?.additionalProperties : at?.properties?.[part]) as typeof at;
    if (at === undefined || typeof at !== 'object') return false;
  }
  return true;
}

t.test('every value the page names is a value of the chart', async (t) => {
  const values = parse(readFileSync(path.join(CHART, 'values.yaml'), 'utf8')) as Record<string, unknown>;
  const schema = JSON.parse(readFileSync(path.join(CHART, 'values.schema.json'), 'utf8')) as unknown;
  const named = new Set<string>();
  for (const m of PAGE.matchAll(/`([a-z][A-Za-z]*(?:\.[A-Za-z*]+)+)`/g)) {
    // A log line's event (`controller.decision`, `guard.lost`) reads like a value; the code that logs it says which it is.
    if (m[1]!.split('.')[0]! in values && !loggedEvent(m[1]!)) named.add(m[1]!);
  }
  t.ok(named.size > 20, `${named.size} values named`);
  for (const name of named) {
    let at: unknown = values;
    for (const part of name.split('.')) at = part === '*' ? at : (at as Record<string, unknown> | undefined)?.[part];
    t.ok(at !== undefined || declared(schema, name), `${name}: in values.yaml, or declared by the schema`);
  }
});

/** Whether some role logs `event` (`logger.info('controller.decision', …)`). */
function loggedEvent(event: string): boolean {
  try {
    return execFileSync('git', ['grep', '-l', '-F', `('${event}'`, '--', '*.ts'], { cwd: ROOT, encoding: 'utf8' }).trim() !== '';
  } catch {
    return false; // git grep exits 1 when nothing matches
  }
}

t.test('the RenderPool example: fields and defaults as the CRD has them', async (t) => {
  const [example] = blocksIn(PAGE, 'The RenderPool', 'yaml');
  const crd = parse(readFileSync(path.join(CHART, 'crds/renderpools.tintype.dev.yaml'), 'utf8'));
  const spec = crd.spec.versions[0].schema.openAPIV3Schema.properties.spec;
  const pool = parse(example!);
  t.equal(`${pool.apiVersion}`, `${crd.spec.group}/${crd.spec.versions[0].name}`);
  t.equal(pool.kind, crd.spec.names.kind);
  const specLines = example!.slice(example!.indexOf('\nspec:\n')).split('\n').filter((l) => /^ {2}\w+:/.test(l));
  t.same(specLines.length, Object.keys(pool.spec).length, 'every field of the example\'s spec read');
  for (const l of specLines) {
    const [, field, value] = /^ {2}(\w+): *(\S+)/.exec(l)!;
    t.ok(field! in spec.properties, `${field} is a field`);
    if (/# required/.test(l)) t.ok(spec.required.includes(field), `${field} is required`);
    const documented = /# default ([\d.]+)/.exec(l)?.[1];
    if (documented !== undefined) {
      t.equal(spec.properties[field!].default, Number(documented), `${field}: default ${documented}`);
      t.equal(Number(value), Number(documented), `${field}: the example shows the default`);
    }
  }
});
