/**
 * The NetworkPolicies, object by object and as a whole: default deny for the release's pods, then
 * only the paths the roles need (docs/helm.md). Each connection is asked of the
 * rendered policies with Kubernetes' semantics (network-policy-eval.ts).
 */
import t from 'tap';
import { NAMESPACE, ofKind, render, RELEASE, type K8sObject } from '../helm.ts';
import { allowed, inCidr, type Endpoint } from './network-policy-eval.ts';

/* eslint-disable @typescript-eslint/no-explicit-any */
const ns = (name: string) => ({ 'kubernetes.io/metadata.name': name });
const HERE = ns(NAMESPACE);
const role = (component: string, ip: string): Endpoint => ({
  labels: { 'app.kubernetes.io/name': 'tintype', 'app.kubernetes.io/instance': RELEASE, 'app.kubernetes.io/component': component },
  namespace: HERE,
  ip,
});
const pod = (labels: Record<string, string>, namespace: Record<string, string>, ip: string): Endpoint => ({ labels, namespace, ip });
const addr = (ip: string): Endpoint => ({ ip });

const envoy = role('envoy', '10.1.0.1');
const policy = role('policy', '10.1.0.2');
const renderer = role('renderer', '10.1.0.3');
const guard = role('guard', '10.1.0.4');
const controller = role('controller', '10.1.0.5');
const helmTest = role('test', '10.1.0.6');
const otherRelease: Endpoint = { ...role('renderer', '10.1.0.7'), labels: { ...role('renderer', '').labels!, 'app.kubernetes.io/instance': 'other' } };
const stranger = pod({ app: 'shop' }, HERE, '10.1.0.9');
const strangerElsewhere = pod({ app: 'shop' }, ns('shop'), '10.2.0.9');
const prometheus = pod({ 'app.kubernetes.io/name': 'prometheus' }, HERE, '10.1.0.10');
const redis = pod({ 'app.kubernetes.io/name': 'redis' }, HERE, '10.1.0.11');
const postgres = pod({ 'app.kubernetes.io/name': 'postgresql' }, HERE, '10.1.0.12');
const dns = pod({ 'k8s-app': 'kube-dns' }, ns('kube-system'), '10.96.0.10');
const fakeDns = pod({ 'k8s-app': 'kube-dns' }, HERE, '10.1.0.13');
const internet = addr('93.184.215.14');
const internet6 = addr('2606:2800:21f:cb07:6820:80da:af6b:8b2c');
/** One address in every range the guard must never reach, IPv4 and IPv6. */
const PRIVATE = ['10.0.0.1', '172.16.0.1', '192.168.1.1', '127.0.0.1', '169.254.169.254', '100.64.0.1', '0.0.0.1', '224.0.0.1',
  '198.18.0.1', '::1', '::', 'fd00::1', 'fc00::1', 'fe80::1', 'fd00:ec2::254', '::ffff:10.0.0.1', '64:ff9b::a00:1', '2002:a00:1::', 'ff02::1'];

let policies: K8sObject[] = [];
const may = (from: Endpoint, to: Endpoint, port: number, protocol = 'TCP') => allowed(policies, HERE, from, to, port, protocol);

t.before(async () => {
  policies = ofKind(await render('operator-scaling-values.yaml'), 'NetworkPolicy');
});

t.test('default deny: every pod of the release, both directions, no rule', async (t) => {
  const deny: any = policies.find((p) => p.metadata.name === `${RELEASE}-default-deny`);
  t.same(deny.spec, {
    podSelector: { matchLabels: { 'app.kubernetes.io/name': 'tintype', 'app.kubernetes.io/instance': RELEASE } },
    policyTypes: ['Ingress', 'Egress'],
  });
  // Every policy governs both directions, so no role is left open in one of them by omission.
  for (const p of policies as any[]) t.same(p.spec.policyTypes, ['Ingress', 'Egress'], p.metadata.name);
});

t.test('renderer: egress only to the guard, policy, Redis and DNS', async (t) => {
  t.ok(may(renderer, guard, 3128), 'guard proxy');
  t.ok(may(renderer, policy, 8181), 'policy claim and settle');
  t.notOk(may(renderer, policy, 8081), 'not policy ext_authz: a renderer cannot take leases');
  t.ok(may(renderer, redis, 6379), 'Redis cache');
  t.ok(may(renderer, dns, 53, 'UDP'), 'DNS over UDP');
  t.ok(may(renderer, dns, 53, 'TCP'), 'DNS over TCP');
  t.ok(may(renderer, addr('169.254.20.10'), 53, 'UDP'), 'the node-local DNS cache (NodeLocal DNSCache)');
  t.notOk(may(renderer, addr('169.254.20.10'), 80), 'on the DNS port only');
  t.notOk(may(renderer, fakeDns, 53, 'UDP'), 'DNS only at the cluster DNS');
  t.notOk(may(renderer, guard, 9128), "not the guard's admin port");
  t.notOk(may(renderer, postgres, 5432), 'not PostgreSQL');
  t.notOk(may(renderer, envoy, 8443), 'not the edge');
  t.notOk(may(renderer, stranger, 80), 'no other pod');
  t.notOk(may(renderer, otherRelease, 8082), "no other release's pod");
  t.notOk(may(renderer, internet, 443), 'not the internet: only through the guard');
  t.notOk(may(renderer, internet6, 443), 'not the internet over IPv6');
  for (const ip of PRIVATE) t.notOk(may(renderer, addr(ip), 80), ip);
  // Each opened port leads to its one peer only.
  for (const port of [3128, 8181, 6379, 53]) {
    for (const to of [stranger, strangerElsewhere, internet, internet6, otherRelease, addr('10.0.0.1'), addr('169.254.169.254')]) {
      t.notOk(may(renderer, to, port) || may(renderer, to, port, 'UDP'), `port ${port} reaches only its own peer (${to.ip})`);
    }
  }
});

t.test('renderer: ingress only from Envoy (8082) and Envoy and the controller (admin 9082); Prometheus only with monitoring on', async (t) => {
  t.ok(may(envoy, renderer, 8082));
  t.ok(may(envoy, renderer, 9082), "Envoy health-checks the renderer's readiness");
  t.ok(may(controller, renderer, 9082), 'the controller reads /state');
  t.notOk(may(prometheus, renderer, 9082), 'monitoring off: no Prometheus is admitted');
  for (const from of [policy, guard, controller, helmTest, stranger, strangerElsewhere, prometheus, otherRelease]) {
    t.notOk(may(from, renderer, 8082), `${from.labels?.['app.kubernetes.io/component'] ?? from.labels?.['app'] ?? from.labels?.['app.kubernetes.io/name']} may not call the renderer`);
  }
  t.notOk(may(stranger, renderer, 9082));
  t.notOk(may(internet, renderer, 8082));
});

t.test('guard: ingress from renderer pods only; egress to the public internet, DNS, nothing private', async (t) => {
  t.ok(may(renderer, guard, 3128));
  for (const from of [envoy, policy, controller, stranger, strangerElsewhere, otherRelease, internet]) t.notOk(may(from, guard, 3128));
  t.notOk(may(prometheus, guard, 9128), 'monitoring off: no Prometheus is admitted');
  t.notOk(may(stranger, guard, 9128));
  t.ok(may(guard, internet, 443), 'IPv4 internet, https');
  t.ok(may(guard, internet, 80), 'IPv4 internet, http');
  t.ok(may(guard, internet6, 443), 'IPv6 internet');
  t.ok(may(guard, dns, 53, 'UDP'));
  for (const ip of PRIVATE) {
    t.notOk(may(guard, addr(ip), 443), `${ip} is never reachable from the guard`);
    t.notOk(may(guard, addr(ip), 80), `${ip}:80`);
  }
  t.notOk(may(guard, policy, 8081), 'not policy');
  t.notOk(may(guard, redis, 6379), 'not Redis');
  t.notOk(may(guard, postgres, 5432), 'not PostgreSQL');
  t.ok(may(guard, addr('10.30.1.1'), 443), 'a range opened on purpose (guard.allowCidrs) is reachable');
});

t.test('policy: ext_authz from Envoy only, claim and settle from renderers only; egress to PostgreSQL and DNS', async (t) => {
  t.ok(may(envoy, policy, 8081));
  t.notOk(may(renderer, policy, 8081), 'a renderer (or Chromium beside it) cannot ask for leases');
  t.ok(may(renderer, policy, 8181));
  t.notOk(may(envoy, policy, 8181), 'Envoy cannot claim or settle');
  for (const from of [guard, controller, stranger, strangerElsewhere, otherRelease, internet]) {
    t.notOk(may(from, policy, 8081));
    t.notOk(may(from, policy, 8181));
  }
  // The admin port (9081: metrics, readiness, the usage report of every key): Envoy's health
  // checks only while monitoring is off; never a renderer, whose Chromium shares its network.
  t.ok(may(envoy, policy, 9081), "Envoy health-checks policy's readiness on its admin port");
  for (const from of [renderer, guard, controller, prometheus, stranger, strangerElsewhere, otherRelease, internet]) t.notOk(may(from, policy, 9081));
  t.ok(may(policy, postgres, 5432));
  t.ok(may(policy, dns, 53, 'UDP'));
  t.notOk(may(policy, redis, 6379));
  t.notOk(may(policy, internet, 443));
  t.notOk(may(policy, renderer, 8082));
  for (const port of [5432, 53]) for (const to of [stranger, internet, redis]) t.notOk(may(policy, to, port) || may(policy, to, port, 'UDP'), `${port} reaches only its peer`);
});

t.test('Envoy: its public port from anywhere; egress to policy and renderers only', async (t) => {
  for (const from of [internet, internet6, stranger, strangerElsewhere, addr('10.9.9.9')]) t.ok(may(from, envoy, 8443));
  t.notOk(may(internet, envoy, 9902), 'the admin port is not public');
  t.notOk(may(prometheus, envoy, 9902), 'monitoring off: no Prometheus is admitted');
  t.ok(may(helmTest, envoy, 8443), 'helm test reaches the public port');
  t.ok(may(helmTest, envoy, 9902), 'and the admin port');
  t.ok(may(envoy, policy, 8081));
  t.ok(may(envoy, renderer, 8082));
  t.notOk(may(envoy, guard, 3128));
  t.notOk(may(envoy, internet, 443));
  t.notOk(may(envoy, redis, 6379));
  t.ok(may(envoy, renderer, 9082), 'readiness health checks');
  t.ok(may(envoy, policy, 9081), "and policy's");
  t.notOk(may(envoy, policy, 9082));
  for (const port of [8081, 8082, 53]) for (const to of [stranger, internet, guard]) t.notOk(may(envoy, to, port) || may(envoy, to, port, 'UDP'), `${port} reaches only its peer`);
});

t.test('controller: the API server and the renderers admin port, nothing else', async (t) => {
  t.ok(may(controller, renderer, 9082));
  t.ok(may(controller, addr('10.96.0.1'), 443), 'API server');
  t.notOk(may(controller, renderer, 8082));
  t.notOk(may(controller, policy, 8081));
  t.notOk(may(controller, guard, 3128));
  t.notOk(may(controller, redis, 6379));
  t.notOk(may(stranger, controller, 9083));
  t.notOk(may(prometheus, controller, 9083), 'monitoring off: no Prometheus is admitted');
  t.ok(may(controller, addr('172.18.0.2'), 6443), 'the API server endpoint after DNAT, on 6443 (kubeadm, kind, k3s)');
  t.notOk(may(controller, addr('172.18.0.2'), 8443), 'no other port');
});

t.test('with tracing on, every role reaches the collector and nothing else is opened', async (t) => {
  const monitored = ofKind(await render('monitoring-values.yaml'), 'NetworkPolicy');
  const collector = pod({ 'app.kubernetes.io/name': 'opentelemetry-collector' }, ns('observability'), '10.3.0.1');
  const prom = pod({ 'app.kubernetes.io/name': 'prometheus' }, ns('monitoring'), '10.4.0.1');
  for (const r of [envoy, policy, renderer, guard]) {
    t.ok(allowed(monitored, HERE, r, collector, 4318), `${r.labels!['app.kubernetes.io/component']} to the collector`);
    t.notOk(allowed(monitored, HERE, r, collector, 4317), 'only its OTLP/HTTP port');
  }
  t.ok(allowed(monitored, HERE, prom, renderer, 9082), 'Prometheus from its namespace scrapes renderers');
  for (const [r, port] of [[envoy, 9902], [guard, 9128]] as const) t.ok(allowed(monitored, HERE, prom, r, port), `and ${r.labels!['app.kubernetes.io/component']}'s admin port`);
  t.ok(allowed(monitored, HERE, prom, policy, 9081), "and policy's admin port");
  t.notOk(allowed(monitored, HERE, prom, policy, 8081), "not policy's ext_authz and settle port");
  t.notOk(allowed(monitored, HERE, renderer, policy, 9081), "monitoring on opens policy's admin port to Prometheus only");
  t.notOk(allowed(monitored, HERE, prometheus, renderer, 9082), 'a look-alike in another namespace may not');
  t.notOk(allowed(monitored, HERE, renderer, internet, 443));
});

t.test("monitoring on with the default Prometheus peer: the release's namespace only, never a look-alike elsewhere", async (t) => {
  const monitored = ofKind(await render('default-values.yaml', ['--set', 'monitoring.serviceMonitors.enabled=true']), 'NetworkPolicy');
  const lookAlike = pod({ 'app.kubernetes.io/name': 'prometheus' }, ns('anyone'), '10.5.0.1');
  for (const [r, port] of [[renderer, 9082], [policy, 9081], [guard, 9128], [envoy, 9902]] as const) {
    const name = r.labels!['app.kubernetes.io/component'];
    t.ok(allowed(monitored, HERE, prometheus, r, port), `Prometheus in the release's namespace scrapes ${name}`);
    t.notOk(allowed(monitored, HERE, lookAlike, r, port), `a pod labelled prometheus in another namespace may not reach ${name}'s admin port`);
  }
  const anywhere = ofKind(await render('default-values.yaml', ['--set', 'monitoring.serviceMonitors.enabled=true', '--set-json', 'networkPolicy.prometheus.namespaceSelector={}']), 'NetworkPolicy');
  t.ok(allowed(anywhere, HERE, lookAlike, renderer, 9082), 'an empty namespaceSelector, set on purpose, still means any namespace');
});

t.test("Redis: the release's namespace by default, never a pod labelled redis elsewhere; {} set on purpose means any", async (t) => {
  const elsewhere = pod({ 'app.kubernetes.io/name': 'redis' }, ns('another-team'), '10.6.0.1');
  t.ok(may(renderer, redis, 6379), "the release's Redis");
  t.notOk(may(renderer, elsewhere, 6379), "another team's Redis");
  const anywhere = ofKind(await render('operator-scaling-values.yaml', ['--set-json', 'networkPolicy.redis.namespaceSelector={}']), 'NetworkPolicy');
  t.ok(allowed(anywhere, HERE, renderer, elsewhere, 6379));
});

t.test('the default values give the same walls (no controller: nobody else reaches the admin port)', async (t) => {
  const defaults = ofKind(await render('default-values.yaml'), 'NetworkPolicy');
  t.notOk(defaults.some((p) => p.metadata.name.endsWith('-controller')));
  t.notOk(allowed(defaults, HERE, controller, renderer, 9082));
  t.ok(allowed(defaults, HERE, envoy, renderer, 8082));
  t.notOk(allowed(defaults, HERE, renderer, internet, 443));
  t.ok(allowed(defaults, HERE, guard, internet, 443));
  for (const ip of PRIVATE) t.notOk(allowed(defaults, HERE, guard, addr(ip), 443), ip);
});

t.test("guard.selfAddresses: the guard refuses the cluster's ranges and its egress leaves them out, IPv4 and IPv6", async (t) => {
  // A dual-stack cluster whose Service range and pod range are global addresses.
  const self = ['34.118.224.0/20', '2600:1900:4000::/44'];
  const objects = await render('default-values.yaml', ['--set', `guard.selfAddresses={${self.join(',')}}`]);
  const withSelf = ofKind(objects, 'NetworkPolicy');
  const from = (to: Endpoint, port = 443) => allowed(withSelf, HERE, guard, to, port);
  t.notOk(from(addr('34.118.224.10')), 'a Service address in the IPv4 range');
  t.notOk(from(addr('34.118.239.255'), 80), 'the last address of it');
  t.notOk(from(addr('2600:1900:4000::5')), 'a pod address in the IPv6 range');
  t.notOk(from(addr('2600:1900:400f:ffff::1')), 'the last /64 of it');
  t.ok(from(internet), 'the IPv4 internet still');
  t.ok(from(internet6), 'the IPv6 internet still');
  t.ok(from(addr('2600:1900:4010::1')), 'the address right past the range');
  for (const ip of PRIVATE) t.notOk(from(addr(ip)), `${ip} still never`);

  const deployment: any = objects.find((o) => o.kind === 'Deployment' && o.metadata.name === `${RELEASE}-guard`);
  const env = deployment.spec.template.spec.containers[0].env as { name: string; value: string }[];
  t.equal(env.find((e) => e.name === 'GUARD_SELF_ADDRESSES')?.value, self.join(','), 'the guard refuses them too (denied_host)');
  const unset: any = ofKind(await render('default-values.yaml'), 'Deployment').find((o: any) => o.metadata.name === `${RELEASE}-guard`);
  t.notOk(unset.spec.template.spec.containers[0].env.some((e: any) => e.name === 'GUARD_SELF_ADDRESSES'), 'unset: not set');
});

t.test('the guard reaches IPv6 global unicast (2000::/3) only, and every except lies inside its cidr', async (t) => {
  for (const ip of ['4000::1', '100::1', '::2', '1000::1', 'e000::1']) t.notOk(may(guard, addr(ip), 443), `${ip} is not global unicast`);
  t.ok(may(guard, addr('2a00:1450:4001::1'), 443), 'a global unicast address is');
  // Kubernetes refuses an ipBlock whose except entry is not a strict subset of its cidr.
  for (const p of policies as any[]) {
    for (const rule of [...(p.spec.egress ?? []), ...(p.spec.ingress ?? [])]) {
      for (const peer of [...(rule.to ?? []), ...(rule.from ?? [])]) {
        const block = peer.ipBlock;
        if (block === undefined) continue;
        const bits = Number(block.cidr.split('/')[1]);
        for (const e of block.except ?? []) {
          t.ok(inCidr(e.split('/')[0], block.cidr) && Number(e.split('/')[1]) > bits, `${p.metadata.name}: ${e} inside ${block.cidr}`);
        }
      }
    }
  }
});

t.test("the migration Job: PostgreSQL and DNS only, nothing in", async (t) => {
  const migrate = role('migrate', '10.1.0.14');
  t.ok(may(migrate, postgres, 5432));
  t.ok(may(migrate, dns, 53, 'UDP'));
  for (const to of [internet, redis, policy, renderer, stranger]) t.notOk(may(migrate, to, 443) || may(migrate, to, 6379) || may(migrate, to, 8081), `not ${to.ip}`);
  for (const from of [envoy, renderer, stranger]) t.notOk(may(from, migrate, 8081), 'no way in');
});
