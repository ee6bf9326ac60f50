/**
 * Envoy's pod leaving under steady traffic (docs/helm.md, "Rolling restarts"), as the chart
 * renders it: the real `tintype envoy-drain` (the drain container) against a stand-in for Envoy's
 * admin API and public listener that follows Envoy's documented behaviour
 * (test/envoy/admin-standin.ts). At the pod's deletion the kubelet sends the drain container
 * SIGTERM and, at the same moment, runs Envoy's preStop (GET /drained on the helper's port);
 * SIGTERM reaches Envoy when that GET is answered. A keep-alive client keeps using its connection
 * to the leaving pod (new connections go to another pod once the endpoints let go of it): with
 * the drain it is told to leave and nothing in flight is cut; without it, it stays until Envoy's
 * SIGTERM.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import t from 'tap';
import { render, ROOT } from '../helm.ts';
import { startEnvoyStandIn, type EnvoyStandIn } from './admin-standin.ts';

/* eslint-disable @typescript-eslint/no-explicit-any */

/** The Envoy pod as rendered with short timings: W = 1 s, the drain time 6 s. */
async function renderedEnvoyPod(): Promise<{ pod: any; drain: any; drainEnv: Record<string, string>; preStop: any; drainTimeS: number; strategy: string }> {
  const objects = await render('default-values.yaml', ['--set', 'renderBudgetMs=1000,edgeMarginSeconds=5,drainWaitSeconds=1']);
  const d: any = objects.find((o) => o.kind === 'Deployment' && o.metadata.name.endsWith('-envoy'));
  const pod = d.spec.template.spec;
  const envoy = pod.containers.find((c: any) => c.name === 'envoy');
  const drain = pod.containers.find((c: any) => c.name === 'drain');
  const arg = (name: string): string => envoy.args[envoy.args.indexOf(name) + 1];
  return {
    pod,
    drain,
    drainEnv: Object.fromEntries(drain.env.map((e: any) => [e.name, e.value])),
    preStop: envoy.lifecycle.preStop,
    drainTimeS: Number(arg('--drain-time-s')),
    strategy: arg('--drain-strategy'),
  };
}

/** A loopback port nothing listens on now. */
async function freePort(): Promise<number> {
  const s = http.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  await new Promise((r) => s.close(r));
  return port;
}

/** The kubelet's httpGet preStop: GET, and the status once answered (or the error). */
function preStopGet(port: number, path: string): Promise<number | string> {
  return new Promise((resolve) => {
    http.get({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode!));
    }).once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
  });
}

/** `bin/tintype envoy-drain` with the drain container's environment, started and idling. */
function startDrainHelper(env: Record<string, string>): Promise<{ child: ChildProcess; exited: Promise<number | null>; output(): string }> {
  const child = spawn('/usr/bin/env', ['-u', 'NODE_OPTIONS', path.join(ROOT, 'bin/tintype'), 'envoy-drain'],
    { env: { PATH: process.env['PATH'], HOME: process.env['HOME'], ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  return new Promise((resolve, reject) => {
    const onData = (c: Buffer): void => {
      out += c.toString('utf8');
      if (out.includes('envoy_drain.waiting')) resolve({ child, exited, output: () => out });
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    void exited.then((code) => reject(new Error(`envoy-drain exited (${code}) before idling:\n${out}`)));
  });
}

interface Outcome { to: 'old' | 'new'; status?: number; error?: string; connectionClose: boolean; at: number }

/**
 * Steady traffic from one keep-alive client: its connection to the leaving pod while it has one,
 * otherwise (the endpoints have let go of the leaving pod) a new connection to another pod.
 */
async function steadyTraffic(old: EnvoyStandIn, until: Promise<void>): Promise<Outcome[]> {
  const other = http.createServer((_req, res) => setTimeout(() => res.end('ok'), 100));
  await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
  const oldAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const newAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  let done = false;
  void until.then(() => (done = true));
  const outcomes: Outcome[] = [];
  // The first request opens the keep-alive connection before the pod is deleted.
  let onOld = true;
  while (!done) {
    const to = onOld || Object.keys(oldAgent.freeSockets).length > 0 ? 'old' : 'new';
    const port = to === 'old' ? old.publicPort : (other.address() as AddressInfo).port;
    const outcome = await new Promise<Outcome>((resolve) => {
      const req = http.get({ host: '127.0.0.1', port, path: '/?ms=100', agent: to === 'old' ? oldAgent : newAgent }, (res) => {
        res.resume();
        res.on('end', () => resolve({ to, status: res.statusCode!, connectionClose: res.headers.connection === 'close', at: Date.now() }));
      });
      req.once('error', (err: NodeJS.ErrnoException) => resolve({ to, error: err.code ?? err.message, connectionClose: false, at: Date.now() }));
    });
    outcomes.push(outcome);
    onOld = false;
  }
  oldAgent.destroy();
  newAgent.destroy();
  other.close();
  other.closeAllConnections();
  return outcomes;
}

t.test('the rendered Envoy pod drains before it is signalled: its preStop waits for the drain helper, within the grace period', async (t) => {
  const { pod, drain, drainEnv, preStop, drainTimeS, strategy } = await renderedEnvoyPod();
  t.equal(strategy, 'immediate', 'keep-alive clients are asked to leave from the drain\'s start');
  t.equal(Number(drainEnv['TINTYPE_DRAIN_TIME_S']), drainTimeS, "the helper waits as long as Envoy's drain lasts");
  t.same(Object.keys(preStop), ['httpGet'], 'no fixed sleep: the preStop is a GET that the helper answers when drained');
  t.equal(preStop.httpGet.path, '/drained');
  t.equal(preStop.httpGet.port, Number(drainEnv['TINTYPE_DRAIN_PORT']), "on the helper's port");
  t.same(drain.ports.map((p: any) => p.containerPort), [preStop.httpGet.port], 'which its container declares');
  t.ok(pod.terminationGracePeriodSeconds > Number(drainEnv['TINTYPE_DRAIN_WAIT_S']) + drainTimeS, 'the wait and the whole drain fit in the grace period');
});

t.test('a rolling restart of Envoy under keep-alive traffic: unready first, the client moves, nothing is cut, SIGTERM once drained', async (t) => {
  const { drainEnv, drainTimeS } = await renderedEnvoyPod();
  const envoy = await startEnvoyStandIn(drainTimeS * 1000);
  const port = await freePort();
  const helper = await startDrainHelper({ ...drainEnv, TINTYPE_DRAIN_PORT: String(port), TINTYPE_ENVOY_ADMIN_URL: envoy.adminUrl, TINTYPE_LOG_LEVEL: 'info' });
  t.teardown(() => helper.child.kill('SIGKILL'));
  let stopTraffic!: () => void;
  const trafficDone = new Promise<void>((r) => (stopTraffic = r));
  const traffic = steadyTraffic(envoy, trafficDone);
  // A render that is running when the drain begins, on a connection of its own.
  const long = new Promise<number>((resolve, reject) => {
    http.get({ host: '127.0.0.1', port: envoy.publicPort, path: '/?ms=1500', agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode!));
    }).once('error', reject);
  });
  await new Promise((r) => setTimeout(r, 300));
  // The pod is deleted: SIGTERM to the drain container and Envoy's preStop, at once.
  const deletedAt = Date.now();
  helper.child.kill('SIGTERM');
  let atSigterm = { inFlight: -1, open: -1, exitedByItself: true };
  const preStop = preStopGet(port, '/drained').then((status) => {
    atSigterm = { inFlight: envoy.inFlight(), open: envoy.openConnections(), exitedByItself: envoy.exitedByItself };
    envoy.terminate();
    return status;
  });
  const helperCode = await helper.exited;
  t.equal(await preStop, 200, "Envoy's preStop was answered");
  stopTraffic();
  const outcomes = await traffic;
  t.equal(helperCode, 0, helper.output());
  t.equal(await long, 200, 'the render in flight when the drain began was answered');
  t.equal(atSigterm.inFlight, 0, 'nothing was in flight when SIGTERM reached Envoy');
  t.equal(atSigterm.open, 0, 'no connection was open: the preStop ended when the connections had drained');
  t.notOk(atSigterm.exitedByItself, 'before the drain time was over (no fixed wait)');
  t.equal(envoy.cut, 0, 'no request was cut');
  t.same(outcomes.filter((o) => o.error !== undefined || o.status !== 200), [], 'every request answered 200');
  t.ok(envoy.unreadyAt !== undefined && envoy.drainStartedAt !== undefined && envoy.unreadyAt < envoy.drainStartedAt,
    'readiness failed first, before the wait and the drain');
  t.ok(envoy.drainStartedAt! >= deletedAt + Number(drainEnv['TINTYPE_DRAIN_WAIT_S']) * 1000, 'the drain began after the wait for the endpoints');
  const oldAfterDelete = outcomes.filter((o) => o.to === 'old' && o.at > deletedAt);
  t.ok(oldAfterDelete.length > 0, 'the keep-alive client kept using the leaving pod after its deletion');
  t.ok(oldAfterDelete.some((o) => o.connectionClose && o.at < envoy.drainStartedAt!), 'until the failed health check told it to leave (connection: close)');
  t.ok(outcomes.at(-1)!.to === 'new', 'and it went on with another pod');
  t.match(helper.output(), /envoy\.unready[\s\S]*envoy\.draining[\s\S]*envoy\.drained/);
});

t.test('without the drain, the keep-alive client stays on the leaving pod until SIGTERM cuts it', async (t) => {
  const { drainEnv, drainTimeS } = await renderedEnvoyPod();
  const envoy = await startEnvoyStandIn(drainTimeS * 1000);
  let stopTraffic!: () => void;
  const traffic = steadyTraffic(envoy, new Promise<void>((r) => (stopTraffic = r)));
  await new Promise((r) => setTimeout(r, 300));
  const deletedAt = Date.now();
  await new Promise((r) => setTimeout(r, (Number(drainEnv['TINTYPE_DRAIN_WAIT_S']) + 2) * 1000));
  envoy.terminate();
  await new Promise((r) => setTimeout(r, 300));
  stopTraffic();
  const outcomes = await traffic;
  t.notOk(outcomes.some((o) => o.connectionClose), 'nobody told the client to leave');
  t.ok(outcomes.filter((o) => o.to === 'old' && o.at > deletedAt + Number(drainEnv['TINTYPE_DRAIN_WAIT_S']) * 1000).length > 0, 'it was still on the leaving pod when the drain would have begun');
});

t.test("a GET /drained that no SIGTERM follows begins nothing: 409 once the helper's wait is over", async (t) => {
  const { drainEnv } = await renderedEnvoyPod();
  const envoy = await startEnvoyStandIn(60_000);
  t.teardown(() => envoy.terminate());
  const port = await freePort();
  const helper = await startDrainHelper({ ...drainEnv, TINTYPE_DRAIN_PORT: String(port), TINTYPE_ENVOY_ADMIN_URL: envoy.adminUrl });
  t.teardown(() => helper.child.kill('SIGKILL'));
  t.equal(await preStopGet(port, '/drained'), 409, 'not draining');
  t.equal(envoy.unreadyAt, undefined, 'Envoy stayed ready');
  t.equal(envoy.drainStartedAt, undefined, 'and was not drained');
  t.equal(await preStopGet(port, '/anything'), 404);
  t.equal(helper.child.exitCode, null, 'the helper idles on');
});
