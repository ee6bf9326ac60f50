/**
 * The edge's renderer hosts follow the cluster's endpoints as Envoy's `renderer` cluster does
 * (envoy/edge/hosts.ts; charts/tintype/files/envoy.yaml): a host gone from the answer is dropped
 * while healthy (ignore_health_on_host_removal), a new one waits for its first passing check
 * (ignore_new_hosts_until_first_hc), one failing its check `unhealthy_threshold` times takes no new
 * request (panic threshold 0: none at all rather than an unhealthy one), a retry avoids the host tried,
 * and hosts as busy as each other are taken at random, not in the answer's order.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { resolvedHosts, type HostAddress } from '../../envoy/edge/hosts.ts';

/** A renderer's admin port whose readiness the test sets. */
async function readiness(t: Pick<typeof import('tap').default, 'teardown'>): Promise<{ ready: boolean; url: string }> {
  const state = { ready: true, url: '' };
  const server = http.createServer((_req, res) => res.writeHead(state.ready ? 200 : 503).end());
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/healthz/ready`;
  return state;
}

const HC = { intervalMs: 60_000, timeoutMs: 1_000, unhealthyThreshold: 2, healthyThreshold: 1 };

t.test('a host leaving the answer is dropped at once, healthy or not; one joining waits for its first check', async (t) => {
  const a = await readiness(t);
  const b = await readiness(t);
  b.ready = false;
  const answer = new Map<string, HostAddress>([['http://10.0.0.1:8082', { url: 'http://10.0.0.1:8082', healthUrl: a.url }]]);
  const hosts = resolvedHosts({ resolve: () => [...answer.values()], healthCheck: HC, ignoreNewHostsUntilFirstHc: true });
  t.teardown(() => hosts.close());
  await hosts.start();
  t.equal(hosts.pick(new Set())?.key, 'http://10.0.0.1:8082');
  // A new pod whose first check fails never takes a request.
  answer.set('http://10.0.0.2:8082', { url: 'http://10.0.0.2:8082', healthUrl: b.url });
  await hosts.refresh();
  t.same(hosts.snapshot(), [{ key: 'http://10.0.0.1:8082', eligible: true }, { key: 'http://10.0.0.2:8082', eligible: false }]);
  // The healthy one leaves the answer: gone, though its check still passes; nothing is left to route to.
  answer.delete('http://10.0.0.1:8082');
  await hosts.refresh();
  t.equal(hosts.pick(new Set()), undefined, 'no host may take a request: 503 busy, not an unverified pod');
  b.ready = true;
  await hosts.check();
  t.equal(hosts.pick(new Set())?.key, 'http://10.0.0.2:8082', 'the new pod takes requests once its check passes');
});

t.test('a host failing its check the threshold times takes no new request until one passes', async (t) => {
  const a = await readiness(t);
  const b = await readiness(t);
  const answer: HostAddress[] = [{ url: 'http://10.0.0.1:8082', healthUrl: a.url }, { url: 'http://10.0.0.2:8082', healthUrl: b.url }];
  const hosts = resolvedHosts({ resolve: () => answer, healthCheck: HC, ignoreNewHostsUntilFirstHc: true });
  t.teardown(() => hosts.close());
  await hosts.start();
  a.ready = false;
  await hosts.check();
  t.ok(hosts.snapshot().every((h) => h.eligible), 'one failure is under the threshold');
  await hosts.check();
  t.same(hosts.snapshot().filter((h) => h.eligible).map((h) => h.key), ['http://10.0.0.2:8082'], 'two take it out');
  t.notOk(hosts.another(new Set(['http://10.0.0.2:8082'])), 'no retry can follow on the one left');
  a.ready = true;
  await hosts.check();
  t.equal(hosts.snapshot().filter((h) => h.eligible).length, 2, 'one pass (healthy_threshold 1) brings it back');
});

t.test('least request first, and a retry goes to a host not tried', async (t) => {
  const answer: HostAddress[] = [{ url: 'http://10.0.0.1:8082' }, { url: 'http://10.0.0.2:8082' }];
  const hosts = resolvedHosts({ resolve: () => answer });
  t.teardown(() => hosts.close());
  await hosts.start();
  const first = hosts.pick(new Set())!;
  first.active = 1;
  const second = hosts.pick(new Set())!;
  t.not(second.key, first.key, 'the idle host is taken');
  second.active = 5;
  t.equal(hosts.pick(new Set([first.key]))?.key, second.key, 'a retry avoids the host tried, though it is less busy');
  t.equal(hosts.pick(new Set([first.key, second.key]))?.key, first.key, 'all tried: the least busy (previous_hosts gives way)');
});

t.test('hosts equally busy are taken at random, not the first in the answer every time', async (t) => {
  const answer: HostAddress[] = [{ url: 'http://10.0.0.1:8082' }, { url: 'http://10.0.0.2:8082' }, { url: 'http://10.0.0.3:8082' }];
  const hosts = resolvedHosts({ resolve: () => answer });
  t.teardown(() => hosts.close());
  await hosts.start();
  const taken = new Map<string, number>();
  for (let i = 0; i < 300; i++) {
    const h = hosts.pick(new Set())!;
    taken.set(h.key, (taken.get(h.key) ?? 0) + 1);
  }
  // Each has a third: the chance that one of them gets fewer than 50 of 300 is below 1e-9.
  t.same([...taken.keys()].sort(), answer.map((a) => a.url), 'every idle host was taken');
  t.ok([...taken.values()].every((n) => n >= 50), `spread: ${[...taken.values()].join(', ')}`);
});
