/**
 * The guard's bounds as the chart renders them (docs/helm.md, docs/security.md "The guard"):
 * GUARD_MAX_TUNNELS sized from renderers × slots × the per-render bound, plus the unnamed peers'
 * bound; the renderer's lanes held to the same per-render bound; the render token key given to the
 * guard and the renderer container, never to the browser container, and required.
 */
import t from 'tap';
import { CHART, helm, render, type K8sObject } from '../helm.ts';

/* eslint-disable @typescript-eslint/no-explicit-any */

function container(objects: K8sObject[], deployment: string, name: string): any {
  const d: any = objects.find((o) => o.kind === 'Deployment' && o.metadata.name === `tt-${deployment}`);
  if (d === undefined) throw new Error(`no Deployment tt-${deployment}`);
  return d.spec.template.spec.containers.find((c: any) => c.name === name);
}

const envOf = (c: any, name: string): string | undefined => c.env?.find((e: any) => e.name === name)?.value;
const names = (c: any): string[] => (c.env ?? []).map((e: any) => e.name);

t.test('defaults: 2 renderers × 2 slots × 64 + 16 tunnels at a guard; lanes bounded alike; the token key beside the guard and renderer only', async (t) => {
  const objects = await render('default-values.yaml');
  const guard = container(objects, 'guard', 'guard');
  t.equal(envOf(guard, 'GUARD_MAX_TUNNELS'), String(2 * 2 * 64 + 16));
  t.equal(envOf(guard, 'GUARD_MAX_TUNNELS_PER_RENDER'), '64');
  t.equal(envOf(guard, 'GUARD_MAX_UNNAMED_TUNNELS'), '16');
  t.equal(envOf(container(objects, 'renderer', 'renderer'), 'GUARD_MAX_TUNNELS_PER_RENDER'), '64', "the renderer's lanes hold the guard's per-render bound");
  t.ok(names(guard).includes('GUARD_TOKEN_KEY'), 'the guard holds the token key');
  t.ok(names(container(objects, 'renderer', 'renderer')).includes('GUARD_TOKEN_KEY'), 'the renderer container holds it');
  t.notOk(names(container(objects, 'renderer', 'browser')).includes('GUARD_TOKEN_KEY'), 'the browser container does not');
  const secret: any = objects.find((o) => o.kind === 'Secret' && o.metadata.name === 'tt-env');
  t.ok(secret.stringData.GUARD_TOKEN_KEY, "the chart's Secret carries it");
});

t.test('the size follows the renderers, their slots and the per-render bound; guard.maxTunnels overrides', async (t) => {
  const sized = await render('default-values.yaml', ['--set', 'renderer.replicas=5,renderer.slots=3,guard.tunnelsPerRender=10,guard.unnamedTunnels=4']);
  t.equal(envOf(container(sized, 'guard', 'guard'), 'GUARD_MAX_TUNNELS'), String(5 * 3 * 10 + 4));
  t.equal(envOf(container(sized, 'renderer', 'renderer'), 'GUARD_MAX_TUNNELS_PER_RENDER'), '10');
  const scaled = await render('operator-scaling-values.yaml', ['--set', 'renderer.slots=2']);
  t.equal(envOf(container(scaled, 'guard', 'guard'), 'GUARD_MAX_TUNNELS'), String(8 * 2 * 64 + 16), "with the controller, the RenderPool's maxReplicas");
  const fixed = await render('default-values.yaml', ['--set', 'guard.maxTunnels=999']);
  t.equal(envOf(container(fixed, 'guard', 'guard'), 'GUARD_MAX_TUNNELS'), '999');
});

t.test('a release without the render token key is refused with what to set', async (t) => {
  const r = await helm(['template', 'tt', CHART, '-f', `${CHART}/ci/default-values.yaml`, '--set', 'secrets.guardTokenKey=']);
  t.not(r.code, 0);
  t.match(r.stderr, /set secrets\.guardTokenKey to the base64 of 32 random bytes/);
});
