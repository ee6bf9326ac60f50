/**
 * The release's RenderPool, checked against the RenderPool CRD's own schema (unknown fields
 * refused, as the API server's strict field validation does). charts/tintype/crds/ is the CRD's
 * one home: the chart installs it, and the controller's tests read it there.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import AjvModule from 'ajv';
import t from 'tap';
import { parse } from 'yaml';
import { CHART, render, RELEASE, type K8sObject } from '../helm.ts';
import { k8sErrors } from './k8s-schema.ts';

/* eslint-disable @typescript-eslint/no-explicit-any */
const CRD_FILE = path.join(CHART, 'crds/renderpools.tintype.dev.yaml');

/** A structural schema made strict: where properties are listed, no other is allowed. */
function strict(s: any): any {
  if (s === null || typeof s !== 'object') return s;
  if (Array.isArray(s)) return s.map(strict);
  const out: any = {};
  for (const [k, v] of Object.entries(s)) if (!k.startsWith('x-kubernetes-')) out[k] = strict(v);
  if (s.type === 'object' && s.properties !== undefined && s.additionalProperties === undefined && s['x-kubernetes-preserve-unknown-fields'] !== true) out.additionalProperties = false;
  return out;
}

let pool: any;
t.before(async () => {
  const objects = await render('operator-scaling-values.yaml');
  pool = objects.find((o: K8sObject) => o.kind === 'RenderPool');
});

t.test('one RenderPool for the release, naming the renderer Deployment', async (t) => {
  t.equal(pool.apiVersion, 'tintype.dev/v1alpha1');
  t.same(pool.spec, {
    deploymentName: `${RELEASE}-renderer`,
    minReplicas: 2,
    maxReplicas: 8,
    targetBusyRatio: 0.6,
    scaleUpStabilizationSeconds: 0,
    scaleDownStabilizationSeconds: 300,
  });
  const none = await render('default-values.yaml');
  t.notOk(none.some((o) => o.kind === 'RenderPool'), 'no RenderPool while the controller is off');
});

t.test("the RenderPool is valid against the CRD's schema", async (t) => {
  const crd = parse(readFileSync(CRD_FILE, 'utf8'));
  t.equal(crd.kind, 'CustomResourceDefinition');
  t.equal(crd.spec.names.kind, 'RenderPool');
  t.same(await k8sErrors(crd), [], 'the CRD is a valid CustomResourceDefinition');
  t.equal(crd.spec.group, 'tintype.dev');
  t.equal(crd.spec.scope, 'Namespaced');
  const version = crd.spec.versions.find((v: any) => v.name === 'v1alpha1');
  t.ok(version?.served && version?.storage, 'v1alpha1 is served and stored');
  const validate = new (AjvModule as unknown as typeof AjvModule.default)({ strict: false, allErrors: true }).compile(strict(version.schema.openAPIV3Schema));
  const body = { apiVersion: pool.apiVersion, kind: pool.kind, metadata: pool.metadata, spec: pool.spec };
  t.ok(validate(body), `the RenderPool passes the CRD's schema ${JSON.stringify(validate.errors ?? [])}`);
  t.notOk(validate({ ...body, spec: { ...pool.spec, maxReplica: 3 } }), 'an unknown field is refused');
});
