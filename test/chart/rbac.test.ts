/**
 * RBAC for the controller only, least privilege: a namespaced Role (no ClusterRole), no
 * wildcard, scaling of the one renderer Deployment by name, no Secret; other roles get none.
 */
import t from 'tap';
import { CI_VALUES, NAMESPACE, ofKind, render, RELEASE } from '../helm.ts';

/* eslint-disable @typescript-eslint/no-explicit-any */
t.test('RBAC exists only with the controller', async (t) => {
  for (const values of CI_VALUES) {
    const objects = await render(values);
    const rbac = objects.filter((o) => o.apiVersion.startsWith('rbac.authorization.k8s.io/'));
    t.notOk(objects.some((o) => o.kind === 'ClusterRole' || o.kind === 'ClusterRoleBinding'), `${values}: nothing cluster-wide`);
    const controller = objects.some((o) => o.kind === 'Deployment' && o.metadata.name === `${RELEASE}-controller`);
    t.same(rbac.map((o) => `${o.kind}/${o.metadata.name}`).sort(), controller ? [`Role/${RELEASE}-controller`, `RoleBinding/${RELEASE}-controller`] : [], values);
  }
});

t.test("the controller's Role: exactly the calls it makes, no wildcard, no Secret", async (t) => {
  const objects = await render('operator-scaling-values.yaml');
  const [role]: any[] = ofKind(objects, 'Role');
  const rules: any[] = role.spec?.rules ?? role.rules;
  for (const r of rules) {
    for (const field of ['apiGroups', 'resources', 'verbs', 'resourceNames']) t.notOk((r[field] ?? []).includes('*'), `no wildcard in ${field}`);
    t.notOk(r.resources.includes('secrets'), 'no Secret');
  }
  const grants = rules.flatMap((r) => r.apiGroups.flatMap((g: string) => r.resources.flatMap((res: string) =>
    r.verbs.map((v: string) => `${g || 'core'}/${res}${r.resourceNames ? `[${r.resourceNames.join(',')}]` : ''}:${v}`))));
  t.same(grants.sort(), [
    `apps/deployments/scale[${RELEASE}-renderer]:patch`,
    'apps/deployments:list',
    'apps/deployments:watch',
    'coordination.k8s.io/leases:create',
    'coordination.k8s.io/leases[tt-controller]:get',
    'coordination.k8s.io/leases[tt-controller]:update',
    'core/pods:list',
    'core/pods:watch',
    'events.k8s.io/events:create',
    `tintype.dev/renderpools/status[${RELEASE}-renderers]:patch`,
    'tintype.dev/renderpools:list',
    'tintype.dev/renderpools:watch',
  ].sort());
  const [binding]: any[] = ofKind(objects, 'RoleBinding');
  t.same(binding.roleRef, { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: `${RELEASE}-controller` });
  t.same(binding.subjects, [{ kind: 'ServiceAccount', name: `${RELEASE}-controller`, namespace: NAMESPACE }]);
});
