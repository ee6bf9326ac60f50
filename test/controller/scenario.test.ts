/**
 * The operator against the loopback API server (fake-apiserver.ts) and fake renderer pods, on a
 * fake clock: a moment's burst with a low mean changes nothing, load rises (1 -> 2 -> 4), a new
 * pod becomes ready, one pod's guard goes unverified,
 * load falls (held inside the down window, then down), the watches expire and relist, the Lease
 * is lost (writes stop) and regained, and SIGTERM's stop releases it.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { createController, createKubeApi, httpStateReader, loadKubeConfig } from '../../controller/index.ts';
import { createLogger } from '../../lib/log.ts';
import { Registry } from '../../lib/metrics.ts';
import { startFakeApiServer, writeKubeconfig } from './fake-apiserver.ts';
import { POD_LABELS, startFakeRenderer, type FakeRenderer } from './fake-pods.ts';

const NS = 'render';
const MICRO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;

async function until(what: string, cond: () => boolean): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (cond()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** The fake API server, a kubeconfig for it, a pool over a Deployment of `replicas`, and a controller on a fake clock. */
async function rig(t: Test, replicas: number) {
  const server = await startFakeApiServer();
  const dir = await mkdtemp(path.join(os.tmpdir(), 'tintype-controller-'));
  const kubeconfig = path.join(dir, 'kubeconfig');
  await writeKubeconfig(kubeconfig, server, NS);
  const pods: FakeRenderer[] = [];
  const other = await startFakeRenderer('other', '127.0.0.30');
  t.teardown(async () => {
    await Promise.all([...pods, other].map((p) => p.close()));
    await server.close();
    await rm(dir, { recursive: true, force: true });
  });
  const addPod = async (ready = true): Promise<FakeRenderer> => {
    const p = await startFakeRenderer(`renderer-${pods.length}`, `127.0.0.${11 + pods.length}`);
    pods.push(p);
    server.apply('pods', NS, p.pod(ready));
    return p;
  };

  server.apply('deployments', NS, {
    metadata: { name: 'renderer' },
    spec: { replicas, selector: { matchLabels: POD_LABELS }, template: { metadata: { labels: POD_LABELS } } },
    status: { replicas },
  });
  server.apply('renderpools', NS, { metadata: { name: 'pool' }, spec: { deploymentName: 'renderer' } });
  // A pod of another app in the namespace is not the pool's.
  server.apply('pods', NS, { ...other.pod(), metadata: { name: 'other', labels: { app: 'other' } } });

  const clock = { now: Date.parse('2026-11-26T10:00:00Z') };
  const logs: string[] = [];
  const api = createKubeApi(loadKubeConfig({ kubeconfig, inCluster: false }));
  const controller = createController({
    api, namespace: NS, leaseNamespace: api.contextNamespace()!, identity: 'controller-a', pollMs: 5_000,
    readState: httpStateReader(2_000), logger: createLogger('controller-test', { level: 'debug', sink: (l) => logs.push(l) }),
    registry: new Registry(), now: () => clock.now, timers: false, backoff: { initialMs: 10, maxMs: 50 },
  });
  const status = (): any => server.get('renderpools', NS, 'pool').status;
  return {
    server, controller, pods, addPod, clock, logs, status,
    replicas: (): number => server.get('deployments', NS, 'renderer').spec.replicas,
    condition: (type: string): any => status()?.conditions?.find((c: any) => c.type === type),
    events: (): any[] => server.list('events', NS),
    step: async (seconds: number): Promise<void> => {
      clock.now += seconds * 1000;
      await controller.leader.tick();
      await controller.reconcile();
    },
  };
}

/** A pod's load: `busy` slots now, `busyMean` on average over the last seconds (a steady load by default). */
const load = (p: FakeRenderer, busy: number, busyMean = busy): void => {
  p.state = { ...p.state, busy, busyMean };
};

t.test('scripted scenario', async (t) => {
  const { server, controller, pods, addPod, clock, logs, replicas, status, condition, events, step } = await rig(t, 1);
  const p0 = await addPod();
  await controller.start();
  await until('the first lists', () => controller.synced());
  const writes = (): number => server.requests.filter((r) => r.method !== 'GET').length;

  await t.test('the pool has its CRD defaults, and the leader its Lease in MicroTime', async (t) => {
    t.same(server.get('renderpools', NS, 'pool').spec, {
      deploymentName: 'renderer', minReplicas: 1, maxReplicas: 10, targetBusyRatio: 0.6, scaleUpStabilizationSeconds: 0, scaleDownStabilizationSeconds: 300,
    });
    await step(0);
    const lease = server.get('leases', NS, 'tintype-controller');
    t.equal(lease.spec.holderIdentity, 'controller-a');
    t.match(lease.spec.renewTime, MICRO_TIME);
    t.match(lease.spec.acquireTime, MICRO_TIME);
    t.ok(controller.leader.isLeader());
    t.equal(replicas(), 1, 'idle: no scale');
    t.equal(status().desiredReplicas, 1);
    t.equal(status().slots, 2);
    t.equal(status().readyReplicas, 1, 'the other app\'s pod is not counted');
    t.equal(condition('Available').status, 'True');
    t.equal(condition('Busy').status, 'False');
    t.equal(condition('GuardVerified').status, 'True');
    const statusWrite = server.requests.find((r) => r.path.endsWith('/renderpools/pool/status'));
    t.equal(statusWrite?.method, 'PATCH');
    t.equal(statusWrite?.contentType, 'application/merge-patch+json');
  });

  await t.test('an unchanged pool writes nothing', async (t) => {
    const before = writes();
    await step(5);
    t.equal(writes() - before, 1, 'only the Lease renewal');
  });

  await t.test("a moment's burst: every slot busy at the reading, little on average: Busy, but no scale", async (t) => {
    load(p0, 2, 0.4);
    await step(5);
    t.equal(replicas(), 1, 'the mean decides, not the moment');
    t.equal(condition('Busy').status, 'True', 'the condition tells the moment');
    t.equal(status().busySlots, 2);
  });

  await t.test('load rises: 1 -> 2, a new pod becomes ready, 2 -> 4', async (t) => {
    load(p0, 2);
    await step(5);
    t.equal(replicas(), 2, '1 -> 2');
    const scale = server.requests.find((r) => r.path.endsWith('/deployments/renderer/scale'));
    t.equal(scale?.method, 'PATCH');
    t.equal(scale?.contentType, 'application/merge-patch+json');
    t.equal(condition('Busy').status, 'True');
    t.equal(condition('Busy').reason, 'AllSlotsBusy');
    t.match(events().at(-1), { reason: 'ScaledUp', type: 'Normal', note: /from 1 to 2/, regarding: { kind: 'RenderPool', name: 'pool' } });
    t.match(events().at(-1).eventTime, MICRO_TIME);

    const p1 = await addPod(false);
    await until('the starting pod', () => controller.cache('pods').has('renderer-1'));
    await step(5);
    t.equal(replicas(), 2, 'a pod not yet ready offers nothing and changes nothing');
    t.equal(status().readyReplicas, 1);

    load(p1, 2);
    server.apply('pods', NS, p1.pod(true));
    await until('the pod ready', () => controller.cache('pods').get('renderer-1')?.status.conditions[0].status === 'True');
    await step(5);
    t.equal(replicas(), 4, '2 -> 4');
    t.equal(status().slots, 4);
    t.equal(status().busySlots, 4);
    t.match(events().at(-1), { reason: 'ScaledUp', note: /from 2 to 4/ });
  });

  await t.test("one pod's guard goes unverified: condition and status change, its slots stop counting", async (t) => {
    const p2 = await addPod();
    const p3 = await addPod();
    await until('four pods', () => controller.cache('pods').size === 5);
    for (const p of [p0, pods[1]!, p2]) load(p, 1);
    p3.state = { ...p3.state, guard: 'unverified' };
    await step(5);
    t.equal(status().unverifiedPods, 1);
    t.equal(status().slots, 6, 'three usable pods');
    t.equal(condition('GuardVerified').status, 'False');
    t.equal(condition('GuardVerified').reason, 'GuardUnverified');
    t.match(condition('GuardVerified').message, /^1 pod /);
    t.equal(replicas(), 4, 'inside the down window: no scale down');
  });

  await t.test('the watches expire and are relisted; bookmarks are followed; a deleted pod leaves', async (t) => {
    const lists = (): number =>
      server.requests.filter((r) => r.method === 'GET' && r.path === `/api/v1/namespaces/${NS}/pods` && r.query.get('watch') === null && r.status === 200).length;
    // A write the pods watch does not see moves the store's version; a bookmark tells the watch.
    server.apply('leases', NS, { metadata: { name: 'unrelated' }, spec: {} });
    const version = server.version();
    server.bookmark();
    // The server then ends the watches (as at their timeoutSeconds): they resume from the bookmark.
    server.dropWatches();
    await until('a watch resumed from the bookmark', () =>
      server.requests.some((r) => r.path === `/api/v1/namespaces/${NS}/pods` && r.query.get('watch') === 'true' && r.query.get('resourceVersion') === version));
    // History moves on past every watch's version, then is compacted: resuming is no longer possible.
    server.apply('leases', NS, { metadata: { name: 'unrelated-2' }, spec: {} });
    const before = lists();
    server.expireWatches();
    await until('a relist', () => lists() > before);
    await until('the watches back', () => server.openWatches() === 3);
    server.remove('pods', NS, 'renderer-3');
    await until('the deleted pod gone', () => !controller.cache('pods').has('renderer-3'));
    await step(5);
    t.equal(status().unverifiedPods, 0);
    t.equal(condition('GuardVerified').status, 'True');
    t.ok(logs.some((l) => l.includes('controller.watch_failed') && l.includes('gone')), 'the 410 was logged');
  });

  await t.test('load falls: held inside the down window, then down by half at most', async (t) => {
    for (const p of pods) load(p, 0);
    await step(60);
    t.equal(replicas(), 4, 'held');
    await step(200);
    t.equal(replicas(), 4, 'still held 265 s after the last higher recommendation');
    await step(60);
    t.equal(replicas(), 2, 'down, 4 -> 2');
    t.match(events().at(-1), { reason: 'ScaledDown', note: /from 4 to 2/ });
    t.equal(condition('Busy').status, 'False');
  });

  await t.test('the Lease is lost: writes stop before another could hold it, and resume once it is regained', async (t) => {
    const restore = server.failWhile((m, p) => m === 'PUT' && p.includes('/leases/'), 500);
    for (const p of pods) load(p, 2);
    // Renewals fail; 10 s (the renew deadline) after the last good one, nothing is written.
    await controller.leader.tick();
    clock.now += 10_000;
    await controller.leader.tick();
    t.notOk(controller.leader.isLeader(), 'no longer leader at the renew deadline');
    const before = writes();
    await controller.reconcile();
    t.equal(writes(), before, 'no scale, status or event write while not leader');
    t.equal(replicas(), 2);
    restore();

    // Another replica holds it now; this one waits a whole lease duration of its own before taking it.
    const lease = server.get('leases', NS, 'tintype-controller');
    server.apply('leases', NS, { ...lease, spec: { ...lease.spec, holderIdentity: 'controller-b', renewTime: lease.spec.renewTime } });
    await step(2);
    t.notOk(controller.leader.isLeader(), 'held by controller-b');
    t.equal(replicas(), 2, 'still no write');
    await step(14);
    t.notOk(controller.leader.isLeader(), 'not before 15 s unchanged');
    await step(2);
    t.ok(controller.leader.isLeader(), 'regained after the Lease stayed unchanged for its duration');
    const regained = server.get('leases', NS, 'tintype-controller');
    t.equal(regained.spec.holderIdentity, 'controller-a');
    t.equal(regained.spec.leaseTransitions, 1);
    t.equal(replicas(), 4, 'writes resume: 2 -> 4');
  });

  await t.test('stop releases the Lease', async (t) => {
    await controller.stop('SIGTERM');
    const lease = server.get('leases', NS, 'tintype-controller');
    t.equal(lease.spec.holderIdentity, undefined);
    t.equal(lease.spec.leaseDurationSeconds, 1);
    await until('the watches closed', () => server.openWatches() === 0);
  });
});

t.test('one pod lying about its slots moves nothing: it is left out, shown by an Event and a condition', async (t) => {
  await t.test('huge slots, all busy, beside two idle pods: 2 stays 2', async (t) => {
    const { controller, addPod, replicas, condition, events, step } = await rig(t, 2);
    const honest = [await addPod(), await addPod()];
    const liar = await addPod();
    for (const p of honest) load(p, 1);
    liar.state = { ...liar.state, slots: 10_000, busy: 10_000, busyMean: 10_000 };
    await controller.start();
    await until('the first lists', () => controller.synced() && controller.cache('pods').size === 4);
    for (let i = 0; i < 4; i++) await step(5);
    t.equal(replicas(), 2, 'where the honest pods put it (2 busy of 4)');
    t.equal(condition('SlotsAgree').status, 'False');
    t.equal(condition('SlotsAgree').reason, 'SlotsDisagree');
    t.match(condition('SlotsAgree').message, /renderer-2/);
    const warnings = events().filter((e) => e.reason === 'SlotsDisagree');
    t.equal(warnings.length, 1, 'one Warning while it keeps lying, not one per poll');
    t.match(warnings[0], { type: 'Warning', note: /renderer-2 reports 10000 slots but its spec configures 2/, regarding: { kind: 'RenderPool', name: 'pool' } });
    t.equal(events().filter((e) => e.reason === 'ScaledUp').length, 0);

    liar.state = { ...liar.state, slots: 2, busy: 0, busyMean: 0 };
    await step(5);
    t.equal(condition('SlotsAgree').status, 'True', 'the condition clears once it reports its configured slots');
    await controller.stop('SIGTERM');
  });

  await t.test('huge slots, none busy, beside saturated pods: 10 stays 10', async (t) => {
    const { controller, addPod, replicas, condition, step } = await rig(t, 10);
    const honest: FakeRenderer[] = [];
    for (let i = 0; i < 9; i++) honest.push(await addPod());
    const liar = await addPod();
    for (const p of honest) load(p, 2);
    liar.state = { ...liar.state, slots: 10_000, busy: 0, busyMean: 0 };
    await controller.start();
    await until('the first lists', () => controller.synced() && controller.cache('pods').size === 11);
    // Past the down window: the lie would have been acted on by now.
    for (let i = 0; i < 4; i++) await step(120);
    t.equal(replicas(), 10, 'where the honest pods put it (every slot busy)');
    t.equal(condition('SlotsAgree').reason, 'SlotsDisagree');
    await controller.stop('SIGTERM');
  });
});
