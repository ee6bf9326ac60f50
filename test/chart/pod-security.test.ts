/**
 * Pod Security `restricted` on every pod the chart makes, and what each pod needs to live by it:
 * writable emptyDirs where it writes, probes, grace periods over the render budget, requests and
 * limits (the renderer's memory from docs/helm.md "Sizing"), tokens mounted for the controller only;
 * and every tintype role under tini, the image's init (docs/security.md: Chromium isolation, `pod`).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { CI_VALUES, ofKind, render, ROOT, type K8sObject } from '../helm.ts';
import { containerArgv, imageConfig, tintypeImages } from './tintype-image.ts';
import { LIVE_PATH, READY_PATH } from '../../lib/admin.ts';

/* eslint-disable @typescript-eslint/no-explicit-any */
type Pod = { name: string; spec: any; kind: string };

/** The pod spec of every Deployment, and of every bare Pod (the helm test). */
function pods(objects: K8sObject[]): Pod[] {
  return objects.flatMap((o): Pod[] => {
    if (o.kind === 'Deployment') return [{ name: o.metadata.name, kind: o.kind, spec: (o as any).spec.template.spec }];
    if (o.kind === 'Pod') return [{ name: o.metadata.name, kind: o.kind, spec: (o as any).spec }];
    if (o.kind === 'Job') return [{ name: o.metadata.name, kind: o.kind, spec: (o as any).spec.template.spec }];
    return [];
  });
}

/** The `restricted` profile of the Pod Security Standards, as a list of broken rules. */
function restrictedViolations(spec: any): string[] {
  const out: string[] = [];
  const podSc = spec.securityContext ?? {};
  if (spec.hostNetwork || spec.hostPID || spec.hostIPC) out.push('host namespaces');
  for (const v of spec.volumes ?? []) {
    const kinds = Object.keys(v).filter((k) => k !== 'name');
    const allowed = ['configMap', 'csi', 'downwardAPI', 'emptyDir', 'ephemeral', 'persistentVolumeClaim', 'projected', 'secret'];
    for (const k of kinds) if (!allowed.includes(k)) out.push(`volume ${v.name}: ${k}`);
  }
  for (const c of [...(spec.initContainers ?? []), ...spec.containers]) {
    const sc = c.securityContext ?? {};
    const nonRoot = sc.runAsNonRoot ?? podSc.runAsNonRoot;
    const user = sc.runAsUser ?? podSc.runAsUser;
    const seccomp = (sc.seccompProfile ?? podSc.seccompProfile)?.type;
    if (nonRoot !== true) out.push(`${c.name}: runAsNonRoot`);
    if (user === 0) out.push(`${c.name}: runAsUser 0`);
    if (sc.privileged === true) out.push(`${c.name}: privileged`);
    if (sc.allowPrivilegeEscalation !== false) out.push(`${c.name}: allowPrivilegeEscalation`);
    if (!(sc.capabilities?.drop ?? []).includes('ALL')) out.push(`${c.name}: drop ALL`);
    const added = sc.capabilities?.add ?? [];
    if (added.some((a: string) => a !== 'NET_BIND_SERVICE')) out.push(`${c.name}: adds ${added}`);
    if (!['RuntimeDefault', 'Localhost'].includes(seccomp)) out.push(`${c.name}: seccompProfile`);
    if (sc.readOnlyRootFilesystem !== true) out.push(`${c.name}: readOnlyRootFilesystem`);
    for (const p of c.ports ?? []) if (p.hostPort) out.push(`${c.name}: hostPort`);
    if (c.resources?.limits?.memory === undefined || c.resources?.requests?.memory === undefined) out.push(`${c.name}: memory request and limit`);
    if (c.resources?.limits?.cpu === undefined || c.resources?.requests?.cpu === undefined) out.push(`${c.name}: cpu request and limit`);
  }
  return out;
}

function env(container: any): Record<string, any> {
  return Object.fromEntries((container.env ?? []).map((e: any) => [e.name, e.value ?? e.valueFrom]));
}

for (const values of CI_VALUES) {
  t.test(`${values}: every pod follows Pod Security restricted`, async (t) => {
    const all = pods(await render(values));
    t.ok(all.length >= 5);
    for (const p of all) t.same(restrictedViolations(p.spec), [], p.name);
  });

  t.test(`${values}: every tintype role runs its own image, under tini, the image's entrypoint`, async (t) => {
    const objects = await render(values);
    const images = tintypeImages(values);
    const dockerfile = path.join(ROOT, 'Dockerfile');
    // Each role's Dockerfile target (docs/helm.md "The images"): the slimmest that holds the role.
    const targets: Record<string, string> = { 'envoy-drain': 'tintype-core', policy: 'tintype-core', guard: 'tintype-core', renderer: 'tintype-renderer', controller: 'tintype-controller' };
    const roles: string[] = [];
    for (const d of ofKind(objects, 'Deployment') as any[]) {
      for (const c of d.spec.template.spec.containers.filter((x: any) => images.has(x.image))) {
        const component = d.spec.template.metadata.labels['app.kubernetes.io/component'];
        // Envoy's pod holds the drain helper (tintype-core) beside Envoy.
        const role = component === 'envoy' ? 'envoy-drain' : component;
        roles.push(role);
        const target = images.get(c.image)!;
        t.equal(target, targets[role], `${d.metadata.name}: ${c.image} is built from ${targets[role]}`);
        const config = imageConfig(dockerfile, target);
        t.equal(config.entrypoint[0], '/usr/bin/tini', `${target}: the image's entrypoint is tini`);
        // A command replaces the ENTRYPOINT: none, or one that is the entrypoint (tini) itself.
        t.same(containerArgv(c, config), [...config.entrypoint, role], `${d.metadata.name}: tini runs tintype ${role}`);
      }
    }
    const expected = ['envoy-drain', 'policy', 'renderer', 'guard', ...(ofKind(objects, 'Deployment').some((d) => d.metadata.name.endsWith('-controller')) ? ['controller'] : [])];
    t.same(roles.sort(), expected.sort(), 'a tintype image runs every role');
    const job: any = objects.find((o) => o.kind === 'Job' && o.metadata.name.endsWith('-migrate'));
    if (job !== undefined) t.equal(images.get(job.spec.template.spec.containers[0].image), 'tintype-core', 'the migration Job runs tintype-core');
  });

  t.test(`${values}: tokens, probes, writable paths and grace periods`, async (t) => {
    const objects = await render(values);
    const accounts = new Map(ofKind(objects, 'ServiceAccount').map((a: any) => [a.metadata.name, a.automountServiceAccountToken]));
    for (const p of pods(objects)) {
      const isController = p.name.endsWith('-controller');
      t.equal(p.spec.automountServiceAccountToken, isController, `${p.name}: token mounted only for the controller`);
      if (p.kind !== 'Deployment') continue;
      t.equal(accounts.get(p.spec.serviceAccountName), isController, `${p.name}: its own ServiceAccount`);
      const [c] = p.spec.containers;
      // Liveness and readiness on /healthz/live and /healthz/ready for every role.
      t.equal(c.livenessProbe.httpGet.path, LIVE_PATH, p.name);
      t.equal(c.readinessProbe.httpGet.path, READY_PATH, p.name);
      // /tmp is writable on a read-only root.
      const tmp = c.volumeMounts.find((m: any) => m.mountPath === '/tmp');
      t.ok(tmp, `${p.name}: /tmp mounted`);
      t.ok(p.spec.volumes.find((v: any) => v.name === tmp.name)?.emptyDir, `${p.name}: /tmp is an emptyDir`);
    }
  });
}

t.test('grace periods cover the render budget and the edge margin, from the one budget value', async (t) => {
  for (const budget of [30000, 90000]) {
    const objects = await render('operator-scaling-values.yaml', ['--set', `renderBudgetMs=${budget}`]);
    const all = pods(objects).filter((p) => p.kind === 'Deployment' && !p.name.endsWith('-controller'));
    for (const p of all) t.ok(p.spec.terminationGracePeriodSeconds > budget / 1000 + 15, `${p.name}: ${p.spec.terminationGracePeriodSeconds}`);
    const envoy = all.find((p) => p.name.endsWith('-envoy'))!;
    // Envoy's preStop waits for the drain helper's drain: the wait, then at most the drain time.
    const drain = envoy.spec.containers.find((c: any) => c.name === 'drain');
    const longest = Number(env(drain)['TINTYPE_DRAIN_WAIT_S']) + Number(env(drain)['TINTYPE_DRAIN_TIME_S']);
    t.ok(envoy.spec.terminationGracePeriodSeconds > longest, 'Envoy drains (preStop) inside its grace period');
    t.ok(longest >= 15 + budget / 1000 + 15, 'Envoy keeps answering while the endpoints let go, then for a whole render');
    // The roles: readiness fails at SIGTERM, they serve through the wait, then finish a render.
    // No preStop reaches a port: a drain that the network could begin, anyone there could begin.
    for (const p of all.filter((x) => !x.name.endsWith('-envoy'))) {
      t.equal(p.spec.containers[0].lifecycle?.preStop, undefined, `${p.name}: no preStop`);
      const wait = Number(env(p.spec.containers[0])['TINTYPE_TERM_DRAIN_S']);
      t.equal(wait, 15, `${p.name}: drains drainWaitSeconds after SIGTERM`);
      t.ok(p.spec.terminationGracePeriodSeconds >= wait + budget / 1000 + 15, `${p.name}: the wait and a whole render fit in the grace period`);
    }
    const renderer = all.find((p) => p.name.endsWith('-renderer'))!;
    t.equal(env(renderer.spec.containers[0])['TINTYPE_RENDER_TIMEOUT_MS'], String(budget));
  }
});

t.test('renderer: the renderer container flat, the browser container per slot + /dev/shm, isolation by pod', async (t) => {
  for (const slots of [2, 4]) {
    const objects = await render('default-values.yaml', ['--set', `renderer.slots=${slots}`]);
    const d: any = objects.find((o) => o.kind === 'Deployment' && o.metadata.name.endsWith('-renderer'));
    const spec = d.spec.template.spec;
    const c = spec.containers.find((x: any) => x.name === 'renderer');
    const b = spec.containers.find((x: any) => x.name === 'browser');
    t.equal(c.resources.limits.memory, '384Mi', `${slots} slots: the renderer's Node, flat`);
    t.equal(c.resources.requests.memory, '384Mi', 'requested as limited');
    t.equal(b.resources.limits.memory, `${160 * slots + 128}Mi`, `${slots} slots: Chromium, per slot and its /dev/shm`);
    t.equal(b.resources.requests.memory, b.resources.limits.memory, 'requested as limited');
    t.equal(env(c)['TINTYPE_SLOTS'], String(slots));
    t.equal(env(b)['TINTYPE_BROWSER_CONNECTIONS'], String(slots + 1), 'a recycled browser beside its replacement');
    const shm = b.volumeMounts.find((m: any) => m.mountPath === '/dev/shm');
    const vol = spec.volumes.find((v: any) => v.name === shm.name);
    t.same(vol.emptyDir, { medium: 'Memory', sizeLimit: '128Mi' });
    t.equal(env(c)['TINTYPE_ISOLATION'], 'pod');
    t.equal(spec.topologySpreadConstraints[0].topologyKey, 'kubernetes.io/hostname');
    t.notOk('runtimeClassName' in spec);
    t.notOk('hostUsers' in spec);
  }
  const hardened: any = (await render('operator-scaling-values.yaml')).find((o) => o.kind === 'Deployment' && o.metadata.name.endsWith('-renderer'));
  t.equal(hardened.spec.template.spec.runtimeClassName, 'gvisor');
  t.notOk('hostUsers' in hardened.spec.template.spec, 'a sandboxed runtime takes no user namespaces: the kubelet refuses the two together');
  const userNs: any = (await render('default-values.yaml', ['--set', 'renderer.hostUsers=false'])).find((o) => o.kind === 'Deployment' && o.metadata.name.endsWith('-renderer'));
  t.equal(userNs.spec.template.spec.hostUsers, false, 'user-namespaced renderers, without a sandboxed runtime');
});

t.test('renderer: Chromium in a container of its own, with no secret, no shared process namespace, the socket the one thing shared', async (t) => {
  for (const values of CI_VALUES) {
    const d: any = (await render(values)).find((o) => o.kind === 'Deployment' && o.metadata.name.endsWith('-renderer'));
    const spec = d.spec.template.spec;
    const c = spec.containers.find((x: any) => x.name === 'renderer');
    const b = spec.containers.find((x: any) => x.name === 'browser');
    t.ok(b, `${values}: a browser container`);
    t.not(spec.shareProcessNamespace, true, `${values}: no shared process namespace (the renderer's environ holds the secrets)`);
    t.equal(b.securityContext.runAsUser, 10002, 'Chromium as a uid of its own');
    t.not(b.securityContext.runAsUser, c.securityContext?.runAsUser ?? spec.securityContext.runAsUser);
    t.notOk(b.envFrom, 'no envFrom');
    t.same((b.env ?? []).filter((e: any) => e.valueFrom !== undefined), [], 'no value from a Secret (or anywhere else)');
    t.same((b.env ?? []).map((e: any) => e.name).sort(), ['HOME', 'TINTYPE_BROWSER_CONNECTIONS', 'TINTYPE_BROWSER_SOCKET']);
    t.equal(b.image.split(':')[0], `${c.image.split(':')[0].replace(/-renderer$/, '')}-browser`, 'the browser image (image.repository with -browser)');
    const mounted = (x: any) => new Set((x.volumeMounts ?? []).map((m: any) => m.name));
    const shared = [...mounted(b)].filter((n) => mounted(c).has(n));
    t.same(shared, ['browser-socket'], 'the socket directory is all the two containers share');
    const socketVolume = spec.volumes.find((v: any) => v.name === 'browser-socket');
    t.ok(socketVolume.emptyDir, 'an emptyDir');
    const socket = env(b)['TINTYPE_BROWSER_SOCKET'];
    t.equal(env(c)['TINTYPE_BROWSER_SOCKET'], socket, 'both name the same socket');
    t.ok(socket.startsWith(b.volumeMounts.find((m: any) => m.name === 'browser-socket').mountPath + '/'), 'in the shared directory');
    t.equal(b.securityContext.seccompProfile.type, 'RuntimeDefault', 'by default');
  }
  const local: any = (await render('default-values.yaml', ['--set', 'renderer.browser.seccompProfile.type=Localhost'])).find((o) => o.kind === 'Deployment' && o.metadata.name.endsWith('-renderer'));
  const b = local.spec.template.spec.containers.find((x: any) => x.name === 'browser');
  t.same(b.securityContext.seccompProfile, { type: 'Localhost', localhostProfile: 'tintype-chromium.json' }, 'the Localhost profile, by value');
  t.same(restrictedViolations(local.spec.template.spec), [], 'still restricted');
  const profile = JSON.parse(readFileSync(path.join(ROOT, 'charts/tintype/files/seccomp/tintype-chromium.json'), 'utf8'));
  // An allow-list (test/renderer/browser/seccomp-profile.test.ts loads it and runs Chromium under it).
  t.equal(profile.defaultAction, 'SCMP_ACT_ERRNO', 'the profile refuses what it does not name');
  const allowed = new Set(profile.syscalls.filter((r: any) => r.action === 'SCMP_ACT_ALLOW').flatMap((r: any) => r.names));
  for (const call of ['unshare', 'clone', 'chroot', 'seccomp']) t.ok(allowed.has(call), `the profile allows ${call} (Chromium's sandbox)`);
  for (const call of ['ptrace', 'process_vm_readv', 'setns', 'mount', 'kexec_load', 'bpf', 'init_module', 'keyctl']) t.notOk(allowed.has(call), `the profile refuses ${call}`);
});

t.test('PodDisruptionBudgets: every serving role, unhealthy pods always evictable', async (t) => {
  const objects = await render('default-values.yaml');
  const pdbs = ofKind(objects, 'PodDisruptionBudget');
  t.same(pdbs.map((p) => p.metadata.name).sort(), ['tt-envoy', 'tt-guard', 'tt-policy', 'tt-renderer']);
  for (const p of pdbs as any[]) {
    t.equal(p.spec.unhealthyPodEvictionPolicy, 'AlwaysAllow', p.metadata.name);
    const d: any = objects.find((o) => o.kind === 'Deployment' && o.metadata.name === p.metadata.name);
    t.same(p.spec.selector.matchLabels, d.spec.selector.matchLabels, `${p.metadata.name} selects its Deployment`);
  }
});
