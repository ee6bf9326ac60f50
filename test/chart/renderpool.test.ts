/**
 * The release's RenderPool, checked against the RenderPool CRD's own schema (unknown fields
 * refused, as the API server's strict field validation does). The chart ships the CRD under
 * charts/tintype/crds/ as a copy of the operator's controller/crd/renderpools.tintype.dev.yaml:
 * once that file exists, the copy must be identical.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import AjvModule from 'ajv';
import t from 'tap';
import { parse } from 'yaml';
import { CHART, render, RELEASE, ROOT, type K8sObject } from '../helm.ts';
import { k8sErrors } from './k8s-schema.ts';

/* eslint-disable @typescript-eslint/no-explicit-any */
const OPERATOR_CRD = path.join(ROOT, 'controller/crd/renderpools.tintype.dev.yaml');
const CHART_CRDS = path.join(CHART, 'crds');

/** A structural schema made strict: where properties are listed, no other is allowed. */
function strict(s: any): any {
  if (s === null || typeof s !== 'object') return s;
  if (Array.isArray(s)) return s.map(strict);
  const out: any = {};
  for (const [k, v] of Object.entries(s)) if (!k.startsWith('x-kubernetes-')) out[k] = strict(v);
  if (s.type === 'object' && s.properties !== undefined && s.additionalProperties === undefined && s['x-kubernetes-preserve-unknown-fields'] !== true) out.additionalProperties = false;
  return out;
}

function chartCrd(): any | undefined {
  if (!existsSync(CHART_CRDS)) return undefined;
  for (const f of readdirSync(CHART_CRDS).filter((n) => n.endsWith('.yaml'))) {
    const doc = parse(readFileSync(path.join(CHART_CRDS, f), 'utf8'));
    if (doc?.kind === 'CustomResourceDefinition' && doc.spec?.names?.kind === 'RenderPool') return doc;
  }
  return undefined;
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
  const crd = chartCrd();
  if (existsSync(OPERATOR_CRD)) {
    t.ok(crd, 'charts/tintype/crds/ holds the RenderPool CRD once the operator ships it');
    t.same(crd, parse(readFileSync(OPERATOR_CRD, 'utf8')), 'identical to controller/crd/renderpools.tintype.dev.yaml');
  }
  if (crd === undefined) {
    // Until the operator's CRD lands there is no schema to hold the object to.
    t.comment('charts/tintype/crds/ has no RenderPool CRD yet: only the spec fields above are checked');
    return;
  }
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
