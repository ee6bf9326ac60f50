/**
 * The chart's wiring against the code: every variable a tintype container is given is one the
 * code reads (a misspelt name fails here), its value is one lib/config.ts accepts, the ports the
 * role will listen on are the ports the Pod, its probes and its Services name, and the
 * addresses roles are given are the Services the chart makes.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { loadConfig } from '../../lib/config.ts';
import { CI_VALUES, NAMESPACE, ROOT, render, type K8sObject } from '../helm.ts';
import { tintypeImages } from './tintype-image.ts';
import { TEST_LEASE_ENV } from '../lib/leases.ts';

/* eslint-disable @typescript-eslint/no-explicit-any */

/** Names lib/config.ts reads, from its source: `(env, 'NAME'`. */
const CONFIG_NAMES = new Set([...readFileSync(path.join(ROOT, 'lib/config.ts'), 'utf8').matchAll(/\(env, '([A-Z][A-Z0-9_]*)'/g)].map((m) => m[1]!));
/**
 * Names the chart sets for code that is landing from other work (leases, the controller), with
 * their exact spelling; each is accepted only while no code reads it, then it must be in the
 * source like any other.
 */
const PENDING = ['TINTYPE_CONTROLLER_POLL_MS', 'POD_NAMESPACE', 'POD_NAME'];
/** Not tintype's: read by Chromium and the platform. */
const PLATFORM = new Set(['HOME']);

function sourceReads(name: string): boolean {
  if (CONFIG_NAMES.has(name)) return true;
  // The controller's settings may live with the controller.
  for (const dir of ['lib', 'controller', 'bin/commands']) {
    try {
      execFileSync('grep', ['-rqF', `'${name}'`, path.join(ROOT, dir)]);
      return true;
    } catch { /* not in this folder */ }
  }
  return false;
}

interface Container { deployment: string; container: any; pod: any }

/** The containers of the Deployments that run one of `images`, the chart's tintype images. */
function tintypeContainers(objects: K8sObject[], images: Map<string, string>): Container[] {
  return objects.flatMap((o: any) => o.kind !== 'Deployment' ? [] :
    o.spec.template.spec.containers.filter((c: any) => images.has(c.image)).map((c: any) => ({ deployment: o.metadata.name, container: c, pod: o.spec.template.spec })));
}

/** The container's environment as the kubelet gives it: Secrets and field references resolved. */
function resolvedEnv(c: any, objects: K8sObject[]): Record<string, string> {
  const secrets = new Map(objects.filter((o) => o.kind === 'Secret').map((s: any) => [s.metadata.name, s.stringData ?? {}]));
  const out: Record<string, string> = {};
  for (const e of c.env ?? []) {
    if (e.value !== undefined) out[e.name] = e.value;
    else if (e.valueFrom?.secretKeyRef) {
      const s = secrets.get(e.valueFrom.secretKeyRef.name);
      // An existing Secret (made outside the chart): stand in a well-formed value.
      out[e.name] = s?.[e.valueFrom.secretKeyRef.key] ?? ({ DATABASE_URL: 'postgres://u@db/t', REDIS_URL: 'redis://r:6379', TINTYPE_COUNTERS_URL: 'rediss://counters:6380', ...TEST_LEASE_ENV } as Record<string, string>)[e.name] ?? 'x';
    } else if (e.valueFrom?.fieldRef?.fieldPath === 'metadata.namespace') out[e.name] = NAMESPACE;
    else if (e.valueFrom?.fieldRef?.fieldPath === 'metadata.name') out[e.name] = 'pod-0';
    else throw new Error(`${e.name}: a source this test does not resolve`);
  }
  return out;
}

for (const values of CI_VALUES) {
  t.test(`${values}: every variable is one the code reads, with a value it accepts`, async (t) => {
    const objects = await render(values);
    const containers = tintypeContainers(objects, tintypeImages(values));
    t.ok(containers.length >= 3);
    for (const { deployment, container } of containers) {
      for (const e of container.env ?? []) {
        const known = PLATFORM.has(e.name) || sourceReads(e.name);
        if (!known && PENDING.includes(e.name)) {
          t.comment(`${deployment}: ${e.name} is set for code that has not landed yet`);
          continue;
        }
        t.ok(known, `${deployment}: ${e.name} is read by the code`);
      }
      const env = resolvedEnv(container, objects);
      t.doesNotThrow(() => loadConfig(env), `${deployment}: lib/config.ts accepts its settings`);
    }
  });

  t.test(`${values}: ports, probes and Services agree with what each role listens on`, async (t) => {
    const objects = await render(values);
    const services = objects.filter((o) => o.kind === 'Service') as any[];
    // Each role's own ports when PORT and TINTYPE_ADMIN_PORT are unset (README: Commands); the
    // controller serves its admin port only. Metrics, probes (and policy's usage report) are on
    // the admin port, never on the port Envoy and the renderers call.
    const defaults: Record<string, [number | undefined, number]> = { policy: [8081, 9081], renderer: [8082, 9082], guard: [3128, 9128], controller: [undefined, 9083] };
    for (const { deployment, container } of tintypeContainers(objects, tintypeImages(values))) {
      const role = container.args[0] as string;
      t.equal(container.args.length, 1, `${deployment}: tintype ${role}`);
      // Envoy's drain helper listens on nothing: it calls Envoy's admin API on loopback.
      if (role === 'envoy-drain') continue;
      const config = loadConfig(resolvedEnv(container, objects));
      const [port, admin] = defaults[role]!;
      const listen = config.port ?? port;
      const adminPort = config.adminPort ?? admin;
      const named = (name: string) => container.ports.find((p: any) => p.name === name)?.containerPort;
      if (listen !== undefined) t.equal(named(role === 'guard' ? 'proxy' : 'http'), listen, `${deployment}: serves on the port the Pod names`);
      t.equal(named('admin'), adminPort, `${deployment}: admin port`);
      t.equal(adminPort, admin, `${deployment}: the admin port README "Commands" names for tintype ${role}`);
      for (const probe of ['livenessProbe', 'readinessProbe', 'startupProbe']) {
        const p = container[probe].httpGet.port;
        t.equal(typeof p === 'number' ? p : named(p), adminPort, `${deployment}: ${probe} on the admin port`);
      }
      const podLabels = (objects.find((d) => d.kind === 'Deployment' && d.metadata.name === deployment) as any).spec.template.metadata.labels;
      const selected = services.filter((s) => Object.entries(s.spec.selector).every(([k, v]) => podLabels[k] === v));
      t.ok(selected.length > 0, `${deployment}: a Service selects it`);
      for (const s of selected) for (const sp of s.spec.ports) t.ok(named(sp.targetPort) !== undefined, `${s.metadata.name}: targetPort ${sp.targetPort} is a port of ${deployment}`);
    }
    const renderer = tintypeContainers(objects, tintypeImages(values)).find((c) => c.container.args[0] === 'renderer')!;
    const env = resolvedEnv(renderer.container, objects);
    const serviceUrl = (u: string) => {
      const url = new URL(u);
      const s = services.find((x) => x.metadata.name === url.hostname);
      return s !== undefined && s.spec.ports.some((p: any) => p.port === Number(url.port));
    };
    t.ok(serviceUrl(env['GUARD_URL']!), 'GUARD_URL names the guard Service and port');
    t.ok(serviceUrl(env['TINTYPE_POLICY_URL']!), 'TINTYPE_POLICY_URL names the policy Service and port');
    t.equal(env['TINTYPE_ISOLATION'], 'pod');
  });
}

t.test('the check would catch a misspelt variable', async (t) => {
  t.notOk(sourceReads('TINTYPE_SLOT'));
  t.notOk(sourceReads('TINTYPE_LEASE_PUBLIC_KEY'));
  t.notOk(PENDING.includes('TINTYPE_LEASE_PUBLIC_KEY'));
  t.ok(sourceReads('TINTYPE_SLOTS'));
});

t.test('numbers reach the roles as the whole numbers they were given, large ones included', async (t) => {
  const objects = await render('operator-scaling-values.yaml', ['--set', 'renderBudgetMs=600000,renderer.maxOutputBytes=1073741824,renderer.recycleAfterRenders=1000000,guard.maxTunnels=1000000']);
  const byRole = new Map(tintypeContainers(objects, tintypeImages('operator-scaling-values.yaml')).map((c) => [c.container.args[0], loadConfig(resolvedEnv(c.container, objects))]));
  t.equal(byRole.get('renderer')!.renderTimeoutMs, 600000);
  t.equal(byRole.get('renderer')!.maxOutputBytes, 1073741824);
  t.equal(byRole.get('renderer')!.recycleAfterRenders, 1000000);
  t.equal(byRole.get('renderer')!.slots, 4);
  t.equal(byRole.get('guard')!.guardMaxTunnels, 1000000);
  t.equal(byRole.get('policy')!.renderTimeoutMs, 600000, 'policy expires leases after the same budget');
});
