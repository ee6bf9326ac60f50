/**
 * The embedded default end to end (issue 6, "Done means"): ping requests per second, and cache
 * hits (POST /v1/html-to-image answered from the cache) per second and their p50/p99, through
 * the real `bin/tintype start` (edge ▸ ext_authz with SQLite ▸ renderer ▸ cache ▸ settle).
 * Baseline in the same run: a bare Koa server in its own process answering the same requests
 * with the same bytes and headers and doing nothing else, driven by the same client.
 *
 * Latency is measured one request at a time on one kept-alive connection; throughput with
 * `--connections` kept-alive connections for `--seconds`. Targets (2 cores): hit p50 ≤ 3 ms,
 * ≥ 1,000 hits/s, the edge adds ≤ 30 % over the bare server.
 *
 * `npm run bench -- edge [--seconds N] [--connections N] [--latency-requests N]`
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { percentile, printMachine, round2 } from './machine.ts';

const args = process.argv.slice(3);
const HERE = path.dirname(fileURLToPath(import.meta.url));
const TINTYPE = path.resolve(HERE, '../bin/tintype');
const CHROMIUM = '/usr/bin/chromium-headless-shell';
const HIT_BODY = JSON.stringify({ html: '<h1>tintype bench</h1>', width: 320, height: 200 });
/** Alternating measurement rounds per target. */
const ROUNDS = 4;
const PLANS = { plans: { bench: { monthlyQuota: 1_000_000_000, perMinute: 1_000_000, concurrentRenders: 10_000 } } };

interface Target {
  name: string;
  port: number;
  headers: Record<string, string>;
}

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

function request(agent: http.Agent, t: Target, method: string, p: string, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { ...t.headers };
    if (body !== undefined) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = String(Buffer.byteLength(body));
    }
    const req = http.request({ host: '127.0.0.1', port: t.port, method, path: p, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

const ping = (agent: http.Agent, t: Target): Promise<Answer> => request(agent, t, 'GET', '/v1/ping');
const hit = (agent: http.Agent, t: Target): Promise<Answer> => request(agent, t, 'POST', '/v1/html-to-image', HIT_BODY);

/** One request at a time on one connection: per-request latency in ms. */
async function latency(t: Target, call: typeof hit, n: number): Promise<{ samples: number[]; bad: number }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const samples: number[] = [];
  let bad = 0;
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const a = await call(agent, t);
    samples.push(performance.now() - t0);
    if (a.status !== 200) bad += 1;
  }
  agent.destroy();
  return { samples, bad };
}

/** `connections` loops for `seconds`: answers per second. */
async function throughput(t: Target, call: typeof hit, connections: number, seconds: number): Promise<{ perSec: number; bad: number }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  let done = 0;
  let bad = 0;
  const end = performance.now() + seconds * 1000;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: connections }, async () => {
    while (performance.now() < end) {
      const a = await call(agent, t);
      if (a.status === 200) done += 1;
      else bad += 1;
    }
  }));
  const elapsed = (performance.now() - t0) / 1000;
  agent.destroy();
  return { perSec: done / elapsed, bad };
}

/** Runs `node --import tsx bench/run.ts edge --bare <answers file>` or `bin/tintype start`; resolves with the child and its port. */
function spawnUntilPort(cmd: string, argv: string[], env: NodeJS.ProcessEnv, pattern: RegExp): Promise<{ child: ChildProcess; port: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, argv, { env, stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString('utf8');
      const m = pattern.exec(out);
      if (m !== null) resolve({ child, port: Number(m[1]) });
    });
    child.once('exit', (code) => reject(new Error(`${cmd} exited (${code}) before listening`)));
  });
}

/** The baseline: Koa answering the recorded answers of the service, byte for byte, doing nothing else. */
async function bareServer(answersFile: string): Promise<void> {
  const { readFileSync } = await import('node:fs');
  const { default: Koa } = await import('koa');
  const recorded = JSON.parse(readFileSync(answersFile, 'utf8')) as Record<string, { status: number; headers: Record<string, string>; body: string }>;
  const app = new Koa();
  app.use(async (ctx) => {
    // Read the body as the renderer must, so the baseline does the same socket work.
    if (ctx.method === 'POST') {
      const chunks: Buffer[] = [];
      for await (const c of ctx.req) chunks.push(c as Buffer);
      JSON.parse(Buffer.concat(chunks).toString('utf8'));
    }
    const a = recorded[`${ctx.method} ${ctx.path}`];
    if (a === undefined) {
      ctx.status = 404;
      return;
    }
    ctx.status = a.status;
    for (const [k, v] of Object.entries(a.headers)) ctx.set(k, v);
    ctx.body = Buffer.from(a.body, 'base64');
  });
  const server = http.createServer(app.callback());
  server.listen(0, '127.0.0.1', () => process.stdout.write(`bare listening on ${(server.address() as AddressInfo).port}\n`));
}

/** The headers a client sees from the service, minus those of the connection itself. */
function replayable(h: http.IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) {
    if (['date', 'connection', 'keep-alive', 'content-length', 'transfer-encoding'].includes(k)) continue;
    if (typeof v === 'string') out[k] = v;
  }
  return out;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      seconds: { type: 'string', default: '5' },
      connections: { type: 'string', default: '16' },
      'latency-requests': { type: 'string', default: '1000' },
    },
  });
  const seconds = Number(values.seconds);
  const connections = Number(values.connections);
  const latencyRequests = Number(values['latency-requests']);
  printMachine(CHROMIUM);

  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'tintype-bench-edge-'));
  const plansFile = path.join(dataDir, 'plans.json');
  writeFileSync(plansFile, JSON.stringify(PLANS));
  const env = { PATH: process.env.PATH, HOME: process.env.HOME, TINTYPE_DATA_DIR: dataDir, TINTYPE_PLANS: plansFile, CHROMIUM_PATH: CHROMIUM };
  const children: ChildProcess[] = [];
  try {
    const service = await spawnUntilPort('/usr/bin/env', ['-u', 'NODE_OPTIONS', TINTYPE, 'start'], { ...env, PORT: '0', TINTYPE_ADMIN_PORT: '0' }, /listening on http:\/\/localhost:(\d+)/);
    children.push(service.child);
    const keyOut = await new Promise<string>((resolve, reject) => {
      const c = spawn('/usr/bin/env', ['-u', 'NODE_OPTIONS', TINTYPE, 'keys', 'create', '--plan', 'bench'], { env, stdio: ['ignore', 'pipe', 'ignore'] });
      let out = '';
      c.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')));
      c.once('close', (code) => (code === 0 ? resolve(out) : reject(new Error('keys create failed'))));
    });
    const secret = /^secret: (\S+)$/m.exec(keyOut)![1]!;
    const edge: Target = { name: 'edge', port: service.port, headers: { authorization: `Bearer ${secret}` } };

    // The first call renders; every later identical call is a hit. Record both answers for the baseline.
    const warm = new http.Agent({ keepAlive: true });
    const first = await hit(warm, edge);
    const aHit = await hit(warm, edge);
    const aPing = await ping(warm, edge);
    warm.destroy();
    if (first.status !== 200 || aHit.headers['x-cache'] !== 'hit' || aPing.status !== 200) {
      throw new Error(`the service did not answer as expected: ${first.status}, x-cache ${String(aHit.headers['x-cache'])}, ping ${aPing.status}`);
    }
    const answersFile = path.join(dataDir, 'answers.json');
    writeFileSync(answersFile, JSON.stringify({
      'POST /v1/html-to-image': { status: 200, headers: replayable(aHit.headers), body: aHit.body.toString('base64') },
      'GET /v1/ping': { status: 200, headers: replayable(aPing.headers), body: aPing.body.toString('base64') },
    }));
    const bareProc = await spawnUntilPort(process.execPath, ['--import', 'tsx', path.join(HERE, 'run.ts'), 'edge', '--bare', answersFile], { ...env, NODE_OPTIONS: '' }, /bare listening on (\d+)/);
    children.push(bareProc.child);
    const bare: Target = { name: 'bare koa', port: bareProc.port, headers: {} };
    console.log(`tintype start on :${edge.port}; bare Koa on :${bare.port}; ${connections} connections, ${seconds} s of each throughput kind and ${latencyRequests} sequential requests per target, in ${ROUNDS} alternating rounds`);

    // Warm both a little, then measure in alternating rounds, so load from elsewhere on this
    // shared machine falls on both alike; samples and counts are pooled over the rounds.
    await latency(edge, hit, 200);
    await latency(bare, hit, 200);
    const pooled = new Map<string, { samples: number[]; hits: number; pings: number; secs: number; bad: number }>();
    for (const t of [bare, edge]) pooled.set(t.name, { samples: [], hits: 0, pings: 0, secs: 0, bad: 0 });
    for (let round = 0; round < ROUNDS; round++) {
      for (const t of round % 2 === 0 ? [bare, edge] : [edge, bare]) {
        const acc = pooled.get(t.name)!;
        const l = await latency(t, hit, Math.ceil(latencyRequests / ROUNDS));
        const h = await throughput(t, hit, connections, seconds / ROUNDS);
        const p = await throughput(t, ping, connections, seconds / ROUNDS);
        acc.samples.push(...l.samples);
        acc.hits += h.perSec;
        acc.pings += p.perSec;
        acc.bad += l.bad + h.bad + p.bad;
      }
    }
    const figures: Record<string, { hitP50: number; hitP99: number; hitsPerSec: number; pingsPerSec: number; bad: number }> = {};
    for (const t of [bare, edge]) {
      const acc = pooled.get(t.name)!;
      const f = { hitP50: percentile(acc.samples, 50), hitP99: percentile(acc.samples, 99), hitsPerSec: acc.hits / ROUNDS, pingsPerSec: acc.pings / ROUNDS, bad: acc.bad };
      figures[t.name] = f;
      console.log(`${t.name.padEnd(9)} cache hit p50 ${round2(f.hitP50)} ms, p99 ${round2(f.hitP99)} ms; ${Math.round(f.hitsPerSec)} hits/s; ${Math.round(f.pingsPerSec)} pings/s; non-200 answers: ${f.bad}`);
    }
    const e = figures['edge']!;
    const b = figures['bare koa']!;
    const addedP50 = (e.hitP50 - b.hitP50) / b.hitP50;
    console.log(`edge over bare: p50 +${round2(addedP50 * 100)} %, hits/s ×${round2(e.hitsPerSec / b.hitsPerSec)}, pings/s ×${round2(e.pingsPerSec / b.pingsPerSec)}`);
    console.log(`targets: hit p50 ≤ 3 ms: ${e.hitP50 <= 3 ? 'met' : 'missed'}; ≥ 1,000 hits/s: ${e.hitsPerSec >= 1000 ? 'met' : 'missed'}; edge adds ≤ 30 %: ${addedP50 <= 0.3 ? 'met' : 'missed'}`);
    console.log(JSON.stringify({
      bench: 'edge',
      hit_p50_ms: round2(e.hitP50),
      hit_p99_ms: round2(e.hitP99),
      hits_per_s: Math.round(e.hitsPerSec),
      pings_per_s: Math.round(e.pingsPerSec),
      non_200: e.bad,
      baseline: 'bare koa, same bytes',
      baseline_hit_p50_ms: round2(b.hitP50),
      baseline_hit_p99_ms: round2(b.hitP99),
      baseline_hits_per_s: Math.round(b.hitsPerSec),
      baseline_pings_per_s: Math.round(b.pingsPerSec),
      edge_added_p50_pct: round2(addedP50 * 100),
      connections,
      seconds,
    }));
  } finally {
    for (const c of children) c.kill('SIGTERM');
    await Promise.all(children.map((c) => new Promise((r) => (c.exitCode !== null ? r(null) : c.once('exit', r)))));
    rmSync(dataDir, { recursive: true, force: true });
  }
}

if (args[0] === '--bare') await bareServer(args[1]!);
else await main();
