/**
 * The guard's cost (docs/performance.md "Running the benchmarks"): requests per second and the latency
 * it adds, through the real `bin/tintype guard` process against a direct connection to the same
 * loopback HTTP server, in the same run. Targets: p50 added ≤ 1 ms, ≥ 1,500 proxied req/s on
 * 2 cores.
 *
 * The target server and the DNS server run in processes of their own, so client, guard,
 * target and resolver do not share an event loop. GUARD_ALLOW_CIDRS opens 127.0.0.5/32, the target's address, for this bench only.
 * Three ways in: direct (baseline), through the guard to the address literally, and through
 * the guard by a name it resolves at a loopback DNS server (one lookup per request, as Chromium's
 * traffic reaches it). Latency is measured on one kept-alive connection, one request at a time;
 * throughput with `--connections` kept-alive connections.
 *
 * The cost of a key's egress policy (docs/security.md "Egress policy per key") beside the guard
 * without one, in the same run: by name, as a render opened with its lease (the guard holds
 * the lease public key, as in a deployment) whose key has no policy (each decision recorded for
 * the audit), and as one whose key has 64 patterns (matched, then recorded). The render's tally,
 * with its audit, is read every 200 ms, as renderers read it when a render ends.
 *
 * `npm run bench -- guard [--seconds N] [--connections N] [--rounds N]`
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { generateKeyPairSync } from 'node:crypto';
import { parseEgressPolicy } from '../lib/egress.ts';
import { renderAuthorization, renderStatsPath } from '../lib/guard-contract.ts';
import { leaseKeyText, leaseSigner } from '../lib/lease.ts';
import { LEASE_HEADER } from '../lib/policy-contract.ts';
import { TEST_LEASE_ENV, testGuardTokens } from '../test/lib/leases.ts';
import { RenderEgress } from '../guard/egress-policy.ts';
import { leaseVerifier } from '../lib/lease.ts';
import { parseRequestTarget } from '../guard/target.ts';
import type { Judgement } from '../guard/judge.ts';
import { startDnsServer } from '../test/guard/dns-server.ts';
import { listenBesideService } from '../test/lib/listen-beside.ts';
import { percentile, printMachine, round2 } from './machine.ts';

const TARGET_HOST = '127.0.0.5';

// Run as `guard.ts --serve-dns`, this file is the loopback DNS server, in a process of its own.
if (process.argv.includes('--serve-dns')) {
  const dns = await startDnsServer((name, type) => ({ addresses: name === 'target.bench' && type === 'A' ? [TARGET_HOST] : [] }));
  process.stdout.write(`${dns.server}\n`);
  process.on('SIGTERM', () => void dns.close().then(() => process.exit(0)));
  await new Promise(() => {});
}

// Run as `guard.ts --serve-target`, it is the target: a plain keep-alive HTTP server answering a
// small body, at a port the guard's own cannot share (test/lib/listen-beside.ts).
if (process.argv.includes('--serve-target')) {
  const body = Buffer.alloc(1024, 'x');
  const server = http.createServer((req, res) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': body.length });
    res.end(body);
  });
  server.keepAliveTimeout = 60_000;
  process.stdout.write(`${await listenBesideService(server, TARGET_HOST)}\n`);
  await new Promise(() => {});
}

const { values: opts } = parseArgs({
  args: process.argv.slice(3),
  options: { seconds: { type: 'string', default: '5' }, connections: { type: 'string', default: '16' }, rounds: { type: 'string', default: '3' } },
});
const SECONDS = Number(opts.seconds);
const ROUNDS = Number(opts.rounds);
const CONNECTIONS = Number(opts.connections);
const TINTYPE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../bin/tintype');

/** This file run as `flag` says (the target or the DNS server), in its own process; resolves the line it prints first. */
function serveChild(flag: '--serve-target' | '--serve-dns'): Promise<{ child: ChildProcess; line: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), flag], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    child.stdout!.once('data', (c: Buffer) => resolve({ child, line: c.toString().trim() }));
    child.once('exit', (code) => reject(new Error(`${flag} exited ${code}`)));
  });
}

/** `bin/tintype guard` with its log in a file (as a container runtime would collect it). */
async function startGuard(env: Record<string, string>, dir: string): Promise<{ child: ChildProcess; port: number }> {
  const logPath = path.join(dir, 'guard.log');
  const log = openSync(logPath, 'w');
  const child = spawn('/usr/bin/env', ['-u', 'NODE_OPTIONS', TINTYPE, 'guard'], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    stdio: ['ignore', 'ignore', log],
  });
  for (let i = 0; i < 400; i += 1) {
    const lines = readFileSync(logPath, 'utf8').split('\n').filter((l) => l.startsWith('{'));
    const parsed = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    const listening = parsed.find((l) => l.event === 'guard.listening');
    if (listening !== undefined && parsed.some((l) => l.event === 'guard.admin_listening')) {
      return { child, port: Number(listening.port) };
    }
    if (child.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`tintype guard did not start: ${readFileSync(logPath, 'utf8')}`);
}

interface Way {
  name: string;
  /** Where the client connects. */
  host: string;
  port: number;
  /** The request target: origin-form direct, absolute-form through the guard. */
  path: string;
  /** The render the request names (`Proxy-Authorization`), for a keyed render. */
  headers?: Record<string, string>;
}

function once(agent: http.Agent, way: Way): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: way.host, port: way.port, path: way.path, agent, ...(way.headers === undefined ? {} : { headers: way.headers }) }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

interface Figures {
  perSec: number;
  p50: number;
  p99: number;
  errors: number;
}

/** `connections` loops of back-to-back requests for `seconds` after a warm-up second. */
async function drive(way: Way, connections: number, seconds: number): Promise<{ perSec: number; samples: number[]; errors: number }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  const samples: number[] = [];
  let errors = 0;
  const warmEnd = performance.now() + 1000;
  const end = warmEnd + seconds * 1000;
  const loop = async (): Promise<void> => {
    while (performance.now() < end) {
      const t0 = performance.now();
      const status = await once(agent, way);
      if (t0 < warmEnd) continue;
      if (status !== 200) errors += 1;
      else samples.push(performance.now() - t0);
    }
  };
  await Promise.all(Array.from({ length: connections }, loop));
  agent.destroy();
  return { perSec: Math.round(samples.length / seconds), samples, errors };
}

/**
 * The decision alone, in this process, where the machine's load hardly reaches it: the guard's
 * judging step with the address rules replaced by an answer at hand, for a render with no
 * binding, a keyed render without a policy (its decision recorded) and one with 64 patterns
 * (matched, then recorded). Microseconds per decision, the median of five runs of 200,000.
 */
async function decisionCost(): Promise<{ none: number; keyed: number; policy: number }> {
  const egress = new RenderEgress({ verifier: leaseVerifier([leaseKeys.publicKey]) });
  const signer = leaseSigner(leaseKeys.privateKey);
  const lease = (policy: boolean): string => signer.sign({ id: `lease${policy ? 1 : 0}`, keyId: 'key_bench', operation: 'screenshot', expiresAt: Date.now() + 3_600_000, ...(policy ? { egress: POLICY } : {}) });
  const keyedToken = testGuardTokens.mint();
  const policyToken = testGuardTokens.mint();
  egress.open(keyedToken, lease(false));
  egress.open(policyToken, lease(true));
  const target = parseRequestTarget('GET', 'http://www.target.bench/page');
  const passed: Judgement = { ok: true, target: target as Exclude<typeof target, { reason: unknown }>, addresses: [{ address: TARGET_HOST, family: 4 }] };
  const judge = async (): Promise<Judgement> => passed;
  const run = async (token: string | undefined): Promise<number> => {
    const runs: number[] = [];
    for (let r = 0; r < 5; r += 1) {
      const t0 = performance.now();
      for (let i = 0; i < 200_000; i += 1) {
        await egress.judge(token, target, judge);
        if (token !== undefined && i % 1_000 === 0) egress.takeAudit(token);
      }
      runs.push(((performance.now() - t0) * 1000) / 200_000);
    }
    return round2(percentile(runs, 50));
  };
  return { none: await run(undefined), keyed: await run(keyedToken), policy: await run(policyToken) };
}

/** Each figure the median of the rounds'. */
function medianFigures(all: readonly Figures[]): Figures {
  const mid = (f: (x: Figures) => number): number => percentile(all.map(f), 50);
  return { perSec: mid((x) => x.perSec), p50: mid((x) => x.p50), p99: mid((x) => x.p99), errors: all.reduce((n, x) => n + x.errors, 0) };
}

async function measure(way: Way): Promise<Figures> {
  const latency = await drive(way, 1, SECONDS);
  const load = await drive(way, CONNECTIONS, SECONDS);
  const f = {
    perSec: load.perSec,
    p50: round2(percentile(latency.samples, 50)),
    p99: round2(percentile(latency.samples, 99)),
    errors: latency.errors + load.errors,
  };
  console.log(
    `${way.name.padEnd(26)} ${String(f.perSec).padStart(6)} req/s (${CONNECTIONS} connections)  ` +
      `latency p50 ${f.p50} ms p99 ${f.p99} ms (one at a time)${f.errors > 0 ? `  errors ${f.errors}` : ''}`,
  );
  return f;
}

printMachine();
console.log(`guard bench: ${SECONDS} s per phase after 1 s warm-up; 1 KiB answers from a loopback server in its own process`);
const dir = mkdtempSync(path.join(os.tmpdir(), 'tintype-bench-guard-'));
const served = await serveChild('--serve-dns');
const dns = { child: served.child, server: served.line };
const aimed = await serveChild('--serve-target');
const target = { child: aimed.child, port: Number(aimed.line) };
const leaseKeys = generateKeyPairSync('ed25519');
const guard = await startGuard(
  { PORT: '0', TINTYPE_ADMIN_PORT: '0', GUARD_TOKEN_KEY: TEST_LEASE_ENV.GUARD_TOKEN_KEY, GUARD_ALLOW_CIDRS: `${TARGET_HOST}/32`, GUARD_DNS_SERVERS: dns.server, TINTYPE_LEASE_PUBLIC_KEYS: leaseKeyText(leaseKeys.publicKey) },
  dir,
);

/** 64 patterns, the target's matching only the last of them by name (a wildcard). */
const POLICY = parseEgressPolicy([...Array.from({ length: 63 }, (_, i) => `customer-${i}.example`), '*.bench']);

/** A render token opened at the guard with a lease signed as policy signs it; its tally (and audit) read every 200 ms. */
async function keyedRender(withPolicy: boolean): Promise<{ headers: Record<string, string>; stop(): void }> {
  const token = testGuardTokens.mint();
  const lease = leaseSigner(leaseKeys.privateKey).sign({
    id: token.slice(0, 22), keyId: 'key_bench', operation: 'screenshot', expiresAt: Date.now() + 3_600_000, ...(withPolicy ? { egress: POLICY } : {}),
  });
  const status = await new Promise<number>((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: guard.port, method: 'POST', path: renderStatsPath(token), headers: { [LEASE_HEADER]: lease } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
  if (status !== 204) throw new Error(`the guard answered ${status} to opening a render`);
  const reader = setInterval(() => http.get({ host: '127.0.0.1', port: guard.port, path: renderStatsPath(token) }, (res) => res.resume()), 200);
  return { headers: { 'proxy-authorization': renderAuthorization(token) }, stop: () => clearInterval(reader) };
}
try {
  const direct = await measure({ name: 'direct (baseline)', host: TARGET_HOST, port: target.port, path: '/page' });
  const literal = await measure({ name: 'guard, address', host: '127.0.0.1', port: guard.port, path: `http://${TARGET_HOST}:${target.port}/page` });
  // By name, as a keyed render without a policy, and with 64 patterns: taken in turns, ROUNDS
  // times, and each figure the median of its rounds, so a change in the machine's load between
  // phases does not land on one of them alone.
  const byName = `http://target.bench:${target.port}/page`;
  const rounds: Array<[Figures, Figures, Figures]> = [];
  for (let round = 0; round < ROUNDS; round += 1) {
    const named = await measure({ name: 'guard, name + DNS lookup', host: '127.0.0.1', port: guard.port, path: byName });
    const unlisted = await keyedRender(false);
    const keyed = await measure({ name: 'keyed render, no policy', host: '127.0.0.1', port: guard.port, path: byName, headers: unlisted.headers });
    unlisted.stop();
    const listed = await keyedRender(true);
    const policed = await measure({ name: 'keyed render, 64 patterns', host: '127.0.0.1', port: guard.port, path: byName, headers: listed.headers });
    listed.stop();
    rounds.push([named, keyed, policed]);
  }
  const [named, keyed, policed] = ([0, 1, 2] as const).map((i) => medianFigures(rounds.map((r) => r[i]))) as [Figures, Figures, Figures];
  const addedP50 = round2(literal.p50 - direct.p50);
  const addedP99 = round2(literal.p99 - direct.p99);
  const namedAddedP50 = round2(named.p50 - direct.p50);
  console.log(`added by the guard: p50 ${addedP50} ms, p99 ${addedP99} ms (by name with a lookup: p50 ${namedAddedP50} ms)`);
  const perDecision = (f: Figures): number => round2(((1 / f.perSec - 1 / named.perSec) * 1e6));
  const cost = await decisionCost();
  console.log(`one decision's judging step in process (µs, median of 5 × 200,000): no render bound ${cost.none}, keyed without a policy ${cost.keyed} (+${round2(cost.keyed - cost.none)}), 64 patterns ${cost.policy} (+${round2(cost.policy - cost.none)})`);
  console.log(`medians of ${ROUNDS} rounds: by name ${named.perSec} req/s p50 ${named.p50} ms; keyed, no policy ${keyed.perSec} req/s p50 ${keyed.p50} ms; 64 patterns ${policed.perSec} req/s p50 ${policed.p50} ms`);
  console.log(`a key's egress policy, beside the same requests by name: p50 ${round2(keyed.p50 - named.p50)} ms (recorded, no policy), ${round2(policed.p50 - named.p50)} ms (64 patterns); ` +
    `throughput ${keyed.perSec} and ${policed.perSec} req/s against ${named.perSec} (${perDecision(keyed)} and ${perDecision(policed)} µs of the guard's time per decision)`);
  console.log(`targets: p50 added <= 1 ms: ${addedP50 <= 1 ? 'met' : 'NOT met'}; >= 1500 proxied req/s: ${literal.perSec >= 1500 ? 'met' : 'NOT met'}`);
  console.log(
    JSON.stringify({
      bench: 'guard',
      per_s: literal.perSec,
      p50_ms: literal.p50,
      p99_ms: literal.p99,
      p50_added_ms: addedP50,
      p99_added_ms: addedP99,
      named_per_s: named.perSec,
      named_p50_ms: named.p50,
      named_p50_added_ms: namedAddedP50,
      keyed_per_s: keyed.perSec,
      keyed_p50_ms: keyed.p50,
      policy_per_s: policed.perSec,
      policy_p50_ms: policed.p50,
      policy_p99_ms: policed.p99,
      policy_us_per_decision: perDecision(policed),
      keyed_us_per_decision: perDecision(keyed),
      decision_us_unbound: cost.none,
      decision_us_keyed: cost.keyed,
      decision_us_policy: cost.policy,
      connections: CONNECTIONS,
      errors: direct.errors + literal.errors + named.errors + keyed.errors + policed.errors,
      baseline: 'direct',
      baseline_per_s: direct.perSec,
      baseline_p50_ms: direct.p50,
      baseline_p99_ms: direct.p99,
    }),
  );
} finally {
  guard.child.kill('SIGTERM');
  target.child.kill('SIGTERM');
  dns.child.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
}
