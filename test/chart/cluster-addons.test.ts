/**
 * What the chart makes for add-ons a cluster may serve (docs/helm.md, "Cluster add-ons"), only
 * when the cluster serves their API (Capabilities.APIVersions):
 * - the browser container's Localhost seccomp profile as a Security Profiles Operator
 *   SeccompProfile, its spec the chart's files/seccomp/tintype-chromium.json as it is, the
 *   container pointed at the path the operator writes, and renderer pods placed only on the nodes
 *   that hold the profile;
 * - a CiliumNetworkPolicy for the controller's way to the API server (toEntities: kube-apiserver),
 *   with the NetworkPolicy's address rule for it left out.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { CHART, helm, named, NAMESPACE, ofKind, render, RELEASE } from '../helm.ts';
import { isBuiltIn, k8sErrors } from './k8s-schema.ts';

/* eslint-disable @typescript-eslint/no-explicit-any */

const SPO = ['--api-versions', 'security-profiles-operator.x-k8s.io/v1/SeccompProfile'];
const CILIUM = ['--api-versions', 'cilium.io/v2/CiliumNetworkPolicy'];
const LOCALHOST = ['--set', 'renderer.browser.seccompProfile.type=Localhost,renderer.browser.seccompProfile.operator.enabled=true,renderer.browser.seccompProfile.nodeSelector.tintype\\.dev/seccomp=chromium,renderer.nodeSelector.pool=render'];

// The SeccompProfile spec's fields and enums, as the operator's v1 API defines them.
const SPEC_FIELDS = ['defaultAction', 'architectures', 'syscalls', 'flags', 'listenerPath', 'listenerMetadata', 'baseProfileName'];
const ACTIONS = ['SCMP_ACT_KILL', 'SCMP_ACT_KILL_PROCESS', 'SCMP_ACT_KILL_THREAD', 'SCMP_ACT_TRAP', 'SCMP_ACT_ERRNO', 'SCMP_ACT_TRACE', 'SCMP_ACT_ALLOW', 'SCMP_ACT_LOG', 'SCMP_ACT_NOTIFY'];
const ARCHES = /^SCMP_ARCH_(NATIVE|X86|X86_64|X32|ARM|AARCH64|MIPS|MIPS64|MIPS64N32|MIPSEL|MIPSEL64|MIPSEL64N32|PPC|PPC64|PPC64LE|S390|S390X|PARISC|PARISC64|RISCV64)$/;

const browserOf = (objects: any[]): any => (named(objects, 'Deployment', `${RELEASE}-renderer`) as any).spec.template.spec.containers.find((c: any) => c.name === 'browser');

t.test('with the operator served: a SeccompProfile of the chart\'s profile, the browser pointed at it, renderers on its nodes', async (t) => {
  const objects = await render('default-values.yaml', [...LOCALHOST, ...SPO]);
  const [profile] = ofKind(objects, 'SeccompProfile') as any[];
  t.equal(profile.apiVersion, 'security-profiles-operator.x-k8s.io/v1');
  t.equal(profile.metadata.namespace, undefined, 'cluster-scoped');
  const file = JSON.parse(readFileSync(path.join(CHART, 'files/seccomp/tintype-chromium.json'), 'utf8'));
  delete file.comment;
  // The operator's API refuses with EPERM and has no field to say so; the file says the same.
  t.ok(file.defaultErrnoRet === undefined || file.defaultErrnoRet === 1, 'the file refuses with EPERM');
  delete file.defaultErrnoRet;
  t.same(profile.spec, file, 'the spec is the profile file as it is');
  t.same(Object.keys(profile.spec).filter((k) => !SPEC_FIELDS.includes(k)), [], 'only fields the API knows');
  t.ok(ACTIONS.includes(profile.spec.defaultAction), 'defaultAction');
  for (const a of profile.spec.architectures ?? []) t.match(a, ARCHES, a);
  for (const s of profile.spec.syscalls ?? []) {
    t.ok(Array.isArray(s.names) && s.names.length > 0 && ACTIONS.includes(s.action), `syscalls: ${s.action}`);
    if (s.errnoRet !== undefined) t.ok(Number.isInteger(s.errnoRet) && s.errnoRet >= 0, 'errnoRet: an integer');
  }
  const browser = browserOf(objects);
  t.same(browser.securityContext.seccompProfile, { type: 'Localhost', localhostProfile: `operator/${profile.metadata.name}.json` }, 'where the operator writes it');
  const pod = (named(objects, 'Deployment', `${RELEASE}-renderer`) as any).spec.template.spec;
  t.same(pod.nodeSelector, { pool: 'render', 'tintype.dev/seccomp': 'chromium' }, "only on the profile's nodes, beside renderer.nodeSelector");
  for (const o of objects.filter(isBuiltIn)) t.same(await k8sErrors(o), [], `${o.kind}/${o.metadata.name}`);
});

t.test('without the operator\'s API: no SeccompProfile, the node\'s file, and NOTES says so', async (t) => {
  const objects = await render('default-values.yaml', LOCALHOST);
  t.same(ofKind(objects, 'SeccompProfile'), []);
  t.same(browserOf(objects).securityContext.seccompProfile, { type: 'Localhost', localhostProfile: 'tintype-chromium.json' });
  const r = await helm(['install', RELEASE, CHART, '-n', NAMESPACE, '--dry-run=client', '-f', path.join(CHART, 'ci/default-values.yaml'), ...LOCALHOST]);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /WARNING: renderer\.browser\.seccompProfile\.operator\.enabled is on, but the cluster serves no\nsecurity-profiles-operator/);
  const off = await render('default-values.yaml', SPO);
  t.same(ofKind(off, 'SeccompProfile'), [], 'RuntimeDefault (the default): none, even where the API is served');
});

t.test('with Cilium served: the controller reaches the API server by identity, and by no address rule', async (t) => {
  const set = ['--set', 'networkPolicy.apiServer.cilium=true'];
  const objects = await render('operator-scaling-values.yaml', [...set, ...CILIUM]);
  const [cnp] = ofKind(objects, 'CiliumNetworkPolicy') as any[];
  t.equal(cnp.apiVersion, 'cilium.io/v2');
  const controller = (named(objects, 'Deployment', `${RELEASE}-controller`) as any).spec.template.metadata.labels;
  for (const [k, v] of Object.entries(cnp.spec.endpointSelector.matchLabels)) t.equal(controller[k], v, `selects the controller: ${k}`);
  t.same(cnp.spec.egress, [{ toEntities: ['kube-apiserver'], toPorts: [{ ports: [{ port: '443', protocol: 'TCP' }, { port: '6443', protocol: 'TCP' }] }] }]);
  const np = named(objects, 'NetworkPolicy', `${RELEASE}-controller`) as any;
  const apiPorts = (e: any): boolean => (e.ports ?? []).some((p: any) => p.port === 443 || p.port === 6443);
  t.same(np.spec.egress.filter(apiPorts), [], 'no rule for the API server\'s ports in the NetworkPolicy');
  const without = await render('operator-scaling-values.yaml', set);
  t.same(ofKind(without, 'CiliumNetworkPolicy'), [], 'not served: none');
  t.ok((named(without, 'NetworkPolicy', `${RELEASE}-controller`) as any).spec.egress.some((e: any) => apiPorts(e) && e.to.some((p: any) => p.ipBlock?.cidr === '0.0.0.0/0')), 'and the address rule stays');
});
