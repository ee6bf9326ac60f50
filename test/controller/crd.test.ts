/**
 * The RenderPool CRD as a wire contract: what the chart installs must be what the controller
 * reads (controller/spec.ts), and the API server (the loopback one, which applies the CRD's own
 * schema) must default and refuse as docs/helm.md "The RenderPool" says.
 */
import { readFileSync } from 'node:fs';
import t from 'tap';
import { parse } from 'yaml';
import { GROUP, KIND, PLURAL, SPEC_DEFAULTS, VERSION } from '../../controller/spec.ts';
import { CRD_PATH, startFakeApiServer } from './fake-apiserver.ts';

const crd = parse(readFileSync(CRD_PATH, 'utf8'));
const version = crd.spec.versions[0];
const schema = version.schema.openAPIV3Schema;

t.test('names, scope, version and subresources', async (t) => {
  t.equal(crd.apiVersion, 'apiextensions.k8s.io/v1');
  t.equal(crd.kind, 'CustomResourceDefinition');
  t.equal(crd.metadata.name, `${PLURAL}.${GROUP}`);
  t.equal(crd.spec.group, GROUP);
  t.equal(crd.spec.scope, 'Namespaced');
  t.same(crd.spec.names.shortNames, ['rp']);
  t.equal(crd.spec.names.kind, KIND);
  t.equal(crd.spec.versions.length, 1);
  t.equal(version.name, VERSION);
  t.ok(version.served && version.storage);
  t.same(version.subresources, { status: {} });
});

t.test('printer columns: Desired, Ready, Busy, Slots, GuardVerified, Age', async (t) => {
  t.same(version.additionalPrinterColumns.map((c: any) => c.name), ['Desired', 'Ready', 'Busy', 'Slots', 'GuardVerified', 'Age']);
  const paths = Object.fromEntries(version.additionalPrinterColumns.map((c: any) => [c.name, c.jsonPath]));
  t.equal(paths.Desired, '.status.desiredReplicas');
  t.equal(paths.Ready, '.status.readyReplicas');
  t.equal(paths.Busy, '.status.busySlots');
  t.equal(paths.Slots, '.status.slots');
  t.equal(paths.GuardVerified, '.status.conditions[?(@.type=="GuardVerified")].status');
  t.equal(paths.Age, '.metadata.creationTimestamp');
  for (const p of ['desiredReplicas', 'readyReplicas', 'busySlots', 'slots']) t.ok(schema.properties.status.properties[p], `status.${p} is in the schema`);
});

t.test("the schema's defaults are the controller's", async (t) => {
  const props = schema.properties.spec.properties;
  for (const [k, v] of Object.entries(SPEC_DEFAULTS)) t.equal(props[k].default, v, k);
  t.same(schema.properties.spec.required, ['deploymentName']);
  t.same(schema.properties.spec['x-kubernetes-validations'].map((v: any) => v.rule), ['self.maxReplicas >= self.minReplicas']);
});

t.test('the API server defaults and refuses by the schema', async (t) => {
  const server = await startFakeApiServer();
  t.teardown(() => server.close());
  const post = (spec: unknown) =>
    fetch(`${server.url}/apis/tintype.dev/v1alpha1/namespaces/ns/renderpools`, {
      method: 'POST', headers: { authorization: `Bearer ${server.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ apiVersion: 'tintype.dev/v1alpha1', kind: 'RenderPool', metadata: { generateName: 'p-' }, spec }),
    });
  const rows: Array<[string, unknown, number, RegExp?]> = [
    ['only the deployment: defaults', { deploymentName: 'r' }, 201],
    ['max equal to min', { deploymentName: 'r', minReplicas: 3, maxReplicas: 3 }, 201],
    ['max below min', { deploymentName: 'r', minReplicas: 3, maxReplicas: 2 }, 422, /maxReplicas must be at least minReplicas/],
    ['max below the default min', { deploymentName: 'r', minReplicas: 11 }, 422, /maxReplicas must be at least minReplicas/],
    ['min below 0', { deploymentName: 'r', minReplicas: -1 }, 422, /minReplicas/],
    ['max 0', { deploymentName: 'r', minReplicas: 0, maxReplicas: 0 }, 422, /maxReplicas/],
    ['target 0.1', { deploymentName: 'r', targetBusyRatio: 0.1 }, 201],
    ['target below 0.1', { deploymentName: 'r', targetBusyRatio: 0.09 }, 422, /targetBusyRatio/],
    ['target 1', { deploymentName: 'r', targetBusyRatio: 1 }, 201],
    ['target above 1', { deploymentName: 'r', targetBusyRatio: 1.01 }, 422, /targetBusyRatio/],
    ['min not an integer', { deploymentName: 'r', minReplicas: 1.5 }, 422, /minReplicas/],
    ['no deployment', {}, 422, /deploymentName: Required/],
  ];
  for (const [name, spec, code, message] of rows) {
    const res = await post(spec);
    const body = (await res.json()) as any;
    t.equal(res.status, code, name);
    if (message !== undefined) t.match(body.message, message, name);
    if (name === 'only the deployment: defaults') t.same(body.spec, { deploymentName: 'r', ...SPEC_DEFAULTS }, 'every default applied');
  }
});
