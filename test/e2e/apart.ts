/**
 * The roles apart, as a cluster runs them, on this machine (test/e2e/apart-net.ts draws the
 * network): `tintype policy` on a PostgreSQL database of its own, `tintype guard` in its own
 * namespace with the only way out, two `tintype renderer` pods with TINTYPE_ISOLATION=pod, the
 * Redis cache behind a relay (a Service address), and the embedded edge in front with the values
 * of envoy.yaml (test/e2e/apart-edge.ts). The test's client reaches the edge on 127.0.0.1, as
 * through a load balancer.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { leaseKeyText } from '../../lib/lease.ts';
import { newRendererToken } from '../../lib/renderer-token.ts';
import pg from 'pg';
import { asPgAdmin } from '../lib/pg-admin.ts';
import { watchOutput } from '../lib/watched-output.ts';
import { Redis } from 'ioredis';
import { send, type Answer, type SendOptions } from '../envoy/client.ts';
import { createApartNet, type ApartNet } from './apart-net.ts';
import { runTintype, type LedgerRow } from './service.ts';
import { startNxdomainDns, startSite, type Site } from './site.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const TINTYPE = path.join(ROOT, 'bin/tintype');
const CHROMIUM = '/usr/bin/chromium-headless-shell';
const REDIS = { host: '127.0.0.1', port: 6379 };

export const ROLE_PORTS = { policy: 8081, policySettle: 8181, renderer: 8082, rendererAdmin: 9082, guard: 3128, guardAdmin: 9128, edge: 8080, edgeAdmin: 9080, cache: 6379, otlp: 4318 } as const;

/** A role's process, started in its namespace. */
export interface Proc {
  child: ChildProcess;
  output(): string;
  /** Resolves when its output matches `re`. */
  waitFor(re: RegExp): Promise<void>;
  /** Sends a signal and waits for the exit. */
  kill(sig: NodeJS.Signals): Promise<void>;
  exited: Promise<number | null>;
}

function run(ns: string, argv: string[], env: Record<string, string>): Proc {
  const child = spawn('ip', ['netns', 'exec', ns, '/usr/bin/env', '-u', 'NODE_OPTIONS', ...argv], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const watched = watchOutput(child, `${argv.join(' ')} in ${ns}`);
  return {
    child,
    ...watched,
    async kill(sig) {
      if (child.exitCode === null && child.signalCode === null) child.kill(sig);
      await watched.exited;
    },
  };
}

export interface ApartOptions {
  /** The test site's and DNS server's address is the host's side of the guard's link: given by `net`. */
  renderTimeoutMs: number;
  slots: number;
  plans: Record<string, { monthlyQuota: number; perMinute: number; concurrentRenders: number }>;
  /** Guard rules (GUARD_DNS_SERVERS, GUARD_SELF_ADDRESSES, …), for the guard and the pods' own check of a page address alike. */
  guardEnv?: Record<string, string>;
  /**
   * A unix socket where an OTLP receiver of the host listens: each role's namespace gets a
   * relay to it on 127.0.0.1 (as a node-local collector), and every role exports its spans there.
   */
  otlpSocket?: string;
  /** TINTYPE_LOG_LEVEL of every role (info unless said). */
  logLevel?: string;
}

export interface Apart {
  net: ApartNet;
  /** The edge's port on 127.0.0.1 of the host. */
  port: number;
  call(o: Omit<SendOptions, 'port'>): Promise<Answer>;
  key(plan: string): Promise<{ secret: string; id: string }>;
  /** The environment `bin/tintype keys …` and `usage` take to reach policy's store. */
  keysEnv: Record<string, string>;
  /** The calls counted against a key's quota this month. */
  used(keyId: string): Promise<number>;
  ledger(keyId: string): Promise<LedgerRow[]>;
  /** Leases of `keyId` not yet settled or expired. */
  openLeases(keyId: string): Promise<number>;
  /** A pod's metrics, read from the edge's namespace (the only one that reaches its admin port); '' when it does not answer. */
  podMetrics(pod: 'r1' | 'r2'): Promise<string>;
  procs: Record<'policy' | 'guard' | 'cache' | 'r1' | 'r2' | 'edge', Proc>;
  /** The OTLP relays, one per namespace that exports spans. */
  relays: Proc[];
  /** Starts a role again in its namespace (after a kill) and waits until it is up. */
  restart(role: 'policy' | 'r1' | 'r2'): Promise<void>;
  /** SIGTERM to every process; resolves with 0 when each exited 0, else the first other code. Once. */
  stop(): Promise<number | null>;
}

/** Brings the deployment up; the caller makes the site and DNS server on `net.siteAddr` first, so it passes `net`. */
export async function startApart(netId: number, o: ApartOptions, makeNet: (n: ApartNet) => Promise<Record<string, string> | void> = async () => {}): Promise<Apart> {
  const net_ = createApartNet(netId);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tintype-apart-'));
  const dbName = `tintype_apart_${process.pid}_${randomBytes(3).toString('hex')}`;
  await asPgAdmin(`CREATE DATABASE ${dbName}`);
  const hostDbUrl = `postgres://postgres@127.0.0.1:5432/${dbName}`;
  // Inside the policy namespace PostgreSQL is reached over its unix socket, which crosses namespaces.
  const podDbUrl = `postgres://postgres@localhost/${dbName}?host=/var/run/postgresql`;
  const plansFile = path.join(dir, 'plans.json');
  writeFileSync(plansFile, JSON.stringify({ plans: o.plans }));
  const db = new pg.Pool({ connectionString: hostDbUrl, max: 2 });
  // The pool's end() resolves once its clients are told to end, not once they have: one still
  // closing when stop() drops the database hears the server end its session (57P01), which an
  // idle client reports as the pool's error, thrown where nothing listens. Nothing is lost there.
  db.on('error', () => {});
  const keysEnv = { DATABASE_URL: hostDbUrl, TINTYPE_PLANS: plansFile };

  // The cache: Redis on the host, behind a unix socket the cache's namespace relays to.
  const redisSock = path.join(dir, 'redis.sock');
  const redisRelay = net.createServer((c) => {
    const u = net.connect(REDIS.port, REDIS.host);
    c.pipe(u).pipe(c);
    const end = (): void => { c.destroy(); u.destroy(); };
    for (const s of [c, u]) { s.once('error', end); s.once('close', end); }
  });
  await new Promise<void>((r) => redisRelay.listen(redisSock, r));
  // Its own database number keeps its entries apart from other suites'.
  const redisDb = 10 + (netId % 5);
  // Emptied first: a run before this one with the same database would turn a first render into a hit.
  const redis = new Redis({ ...REDIS, db: redisDb, lazyConnect: true });
  await redis.connect();
  await redis.flushdb();
  redis.disconnect();

  // The client's way in: 127.0.0.1 on the host to the edge's address (a load balancer).
  const front = net.createServer((c) => {
    const u = net.connect(ROLE_PORTS.edge, net_.edgeAddr);
    c.pipe(u).pipe(c);
    const end = (): void => { c.destroy(); u.destroy(); };
    for (const s of [c, u]) { s.once('error', end); s.once('close', end); }
  });
  await new Promise<void>((r) => front.listen(0, '127.0.0.1', r));
  const port = (front.address() as net.AddressInfo).port;

  const made = await makeNet(net_);
  // One lease key pair: policy signs with the private key, every renderer pod holds the public
  // key only, as the chart's Secret gives them.
  const leaseKeys = generateKeyPairSync('ed25519');
  const tokenKey = randomBytes(32).toString('base64');
  const common: Record<string, string> = {
    TINTYPE_RENDER_TIMEOUT_MS: String(o.renderTimeoutMs),
    TINTYPE_LOG_LEVEL: o.logLevel ?? 'info',
    TINTYPE_LEASE_PUBLIC_KEYS: leaseKeyText(leaseKeys.publicKey),
    // The guard and the renderers share the render token key (lib/render-token.ts); policy ignores it.
    GUARD_TOKEN_KEY: tokenKey,
    // Policy and the renderer pods hold it, as the chart's Secret gives it to them.
    TINTYPE_RENDERER_TOKEN: newRendererToken(),
    ...(o.otlpSocket === undefined ? {} : { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${ROLE_PORTS.otlp}` }),
  };
  const tintype = (ns: string, role: string, env: Record<string, string>): Proc => run(ns, [TINTYPE, role], { ...common, ...env });
  const startPolicy = (): Proc => tintype(net_.ns('p'), 'policy', { PORT: String(ROLE_PORTS.policy), TINTYPE_POLICY_SETTLE_PORT: String(ROLE_PORTS.policySettle), TINTYPE_LEASE_SIGNING_KEY: leaseKeyText(leaseKeys.privateKey), DATABASE_URL: podDbUrl, TINTYPE_PLANS: plansFile, TINTYPE_DATA_DIR: dir });
  const guardRules = { GUARD_ALLOW_CIDRS: `${net_.siteAddr}/32`, ...o.guardEnv, ...(made ?? {}) };
  const startPod = (m: 'r1' | 'r2'): Proc => {
    const data = path.join(dir, m);
    return tintype(net_.ns(m), 'renderer', {
      ...guardRules,
      PORT: String(ROLE_PORTS.renderer),
      TINTYPE_ADMIN_PORT: String(ROLE_PORTS.rendererAdmin),
      TINTYPE_ISOLATION: 'pod',
      TINTYPE_SLOTS: String(o.slots),
      TINTYPE_DATA_DIR: data,
      GUARD_URL: `http://${net_.addr('g')}:${ROLE_PORTS.guard}`,
      TINTYPE_POLICY_URL: `http://${net_.addr('p')}:${ROLE_PORTS.policySettle}`,
      REDIS_URL: `redis://${net_.addr('c')}:${ROLE_PORTS.cache}/${redisDb}`,
      CHROMIUM_PATH: CHROMIUM,
    });
  };

  const procs = {} as Apart['procs'];
  const relays: Proc[] = [];
  const codes = async (): Promise<number | null> => {
    const all = await Promise.all([...Object.values(procs), ...relays].map((p) => p.kill('SIGTERM').then(() => p.exited)));
    return all.find((c) => c !== 0) ?? 0;
  };
  let stopped: Promise<number | null> | undefined;
  const stopAll = (): Promise<number | null> => (stopped ??= stopEverything());
  const stopEverything = async (): Promise<number | null> => {
    const code = await codes().catch(() => null);
    front.close();
    redisRelay.close();
    await db.end().catch(() => {});
    await asPgAdmin(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
    net_.destroy();
    rmSync(dir, { recursive: true, force: true });
    return code;
  };
  try {
    if (o.otlpSocket !== undefined) {
      for (const m of ['p', 'r1', 'r2', 'e']) {
        relays.push(run(net_.ns(m), ['node', '--import', 'tsx', path.join(ROOT, 'test/e2e/apart-relay.ts'), '127.0.0.1', String(ROLE_PORTS.otlp), o.otlpSocket], {}));
      }
      await Promise.all(relays.map((r) => r.waitFor(/relay\.ready/)));
    }
    procs.cache = run(net_.ns('c'), ['node', '--import', 'tsx', path.join(ROOT, 'test/e2e/apart-relay.ts'), net_.addr('c'), String(ROLE_PORTS.cache), redisSock], {});
    procs.guard = tintype(net_.ns('g'), 'guard', {
      PORT: String(ROLE_PORTS.guard),
      TINTYPE_ADMIN_PORT: String(ROLE_PORTS.guardAdmin),
      ...guardRules,
    });
    procs.policy = startPolicy();
    await Promise.all([procs.cache.waitFor(/relay\.ready/), procs.guard.waitFor(/guard\.admin_listening/), procs.policy.waitFor(/"listening"|listening/)]);
    procs.r1 = startPod('r1');
    procs.r2 = startPod('r2');
    const renderers = (['r1', 'r2'] as const).map((m) => `${net_.addr(m)}:${ROLE_PORTS.renderer}:${ROLE_PORTS.rendererAdmin}`).join(',');
    procs.edge = run(net_.ns('e'), ['node', '--import', 'tsx', path.join(ROOT, 'test/e2e/apart-edge.ts')], {
      ...common,
      POLICY_URL: `http://${net_.addr('p')}:${ROLE_PORTS.policy}`,
      RENDERERS: renderers,
      PORT: String(ROLE_PORTS.edge),
      TINTYPE_ADMIN_PORT: String(ROLE_PORTS.edgeAdmin),
    });
    await Promise.all([procs.r1.waitFor(/guard\.self_test_passed/), procs.r2.waitFor(/guard\.self_test_passed/), procs.edge.waitFor(/edge\.ready/)]);
  } catch (err) {
    await stopAll();
    throw err;
  }

  return {
    net: net_,
    port,
    procs,
    relays,
    keysEnv,
    call: (req) => send({ ...req, port }),
    async key(plan) {
      const r = await runTintype(['keys', 'create', '--plan', plan], keysEnv);
      const secret = /^secret: (\S+)$/m.exec(r.stdout)?.[1];
      const id = /^id: (\S+)$/m.exec(r.stdout)?.[1];
      if (r.code !== 0 || secret === undefined || id === undefined) throw new Error(`keys create failed: ${r.stderr}`);
      return { secret, id };
    },
    async ledger(keyId) {
      const r = await db.query('SELECT operation, status, error, cache, metered::int AS metered, outcome FROM usage WHERE key_id = $1 ORDER BY seq', [keyId]);
      return r.rows as LedgerRow[];
    },
    async used(keyId) {
      const r = await db.query('SELECT COALESCE(SUM(used), 0)::int AS n FROM usage_months WHERE key_id = $1', [keyId]);
      return (r.rows[0] as { n: number }).n;
    },
    async openLeases(keyId) {
      const r = await db.query('SELECT count(*)::int AS n FROM leases WHERE key_id = $1', [keyId]);
      return (r.rows[0] as { n: number }).n;
    },
    podMetrics(pod) {
      const url = `http://${net_.addr(pod)}:${ROLE_PORTS.rendererAdmin}/metrics`;
      return new Promise((resolve) => {
        execFile('ip', ['netns', 'exec', net_.ns('e'), 'node', '-e', `fetch(${JSON.stringify(url)}).then(r=>r.text()).then(t=>process.stdout.write(t)).catch(()=>{})`],
          { encoding: 'utf8' }, (_err, stdout) => resolve(stdout ?? ''));
      });
    },
    async restart(role) {
      if (role === 'policy') {
        procs.policy = startPolicy();
        await procs.policy.waitFor(/listening/);
      } else {
        procs[role] = startPod(role);
        await procs[role].waitFor(/guard\.self_test_passed/);
      }
    },
    stop: stopAll,
  };
}

/**
 * The roles apart with the test site and a DNS server that knows no other name, both on the
 * host's side of the guard's link. Stopping the deployment closes them too; when it does not come
 * up, they are closed before the error is thrown.
 */
export async function startApartWithSite(netId: number, o: ApartOptions): Promise<{ apart: Apart; site: Site }> {
  let site: Site | undefined;
  let dns: { server: string; close(): Promise<void> } | undefined;
  const closeSite = async (): Promise<void> => {
    await site?.close();
    await dns?.close();
  };
  try {
    const apart = await startApart(netId, o, async (n) => {
      site = await startSite(n.siteAddr);
      dns = await startNxdomainDns(n.siteAddr);
      return { GUARD_DNS_SERVERS: dns.server };
    });
    const stop = async (): Promise<number | null> => {
      try {
        return await apart.stop();
      } finally {
        await closeSite();
      }
    };
    return { apart: { ...apart, stop }, site: site! };
  } catch (err) {
    await closeSite();
    throw err;
  }
}
