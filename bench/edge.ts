/**
 * The embedded default end to end (docs/performance.md): ping requests per second, and cache
 * hits (POST /v1/html-to-image answered from the cache) per second and their p50/p99, through
 * the real `bin/tintype start` (edge ▸ ext_authz with SQLite ▸ renderer ▸ cache ▸ settle).
 * Baseline in the same run: a bare Koa server in its own process answering the same requests
 * with the same bytes and headers and doing nothing else, driven by the same client. Beside it,
 * the least any edge in front of a server does: the bare server behind one pass-through hop
 * (node:http, kept-alive upstream, nothing else), which shows what a separate edge process
 * costs before it authorizes or meters anything. And the roles apart, as a cluster runs them
 * (test/e2e/apart.ts, as root): the same requests through the embedded edge in a network
 * namespace of its own, policy on PostgreSQL, two pod-isolated renderers and the Redis cache.
 *
 * Latency is measured one request at a time on one kept-alive connection; throughput with
 * `--connections` kept-alive connections for `--seconds`. The client writes prepared request
 * bytes on raw sockets (node:http would cost it about as much per call as the bare server), and
 * the CPU each server and the client spent per answer is read from /proc: on a shared machine
 * CPU per answer is steadier than answers per second. Targets (2 cores): hit p50 ≤ 3 ms,
 * ≥ 1,000 hits/s, the edge adds ≤ 30 % over the bare server (hit p50).
 *
 * `npm run bench -- edge [--seconds N] [--connections N] [--latency-requests N] [--cpu-prof DIR] [--service-log FILE]`
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { cpuSecondsOf, percentile, printMachine, round2 } from './machine.ts';
import { START_PORT_PATTERN, startArgs } from './service.ts';
import { ROLE_PORTS, startApart, type Apart } from '../test/e2e/apart.ts';
import { CACHE_HEADER } from '../renderer/server/answer-headers.ts';

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
  /** Where it listens: 127.0.0.1, or the apart deployment's edge address. */
  host: string;
  port: number;
  /** The request bytes of a cache hit and of a ping, written as they are for every call. */
  hit: Buffer;
  ping: Buffer;
}

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/** The same request bytes for both targets: method, path, key, body. */
function requestBytes(port: number, secret: string, kind: 'hit' | 'ping'): Buffer {
  const head = [
    kind === 'hit' ? 'POST /v1/html-to-image HTTP/1.1' : 'GET /v1/ping HTTP/1.1',
    `host: 127.0.0.1:${port}`,
    `authorization: Bearer ${secret}`,
    ...(kind === 'hit' ? ['content-type: application/json', `content-length: ${Buffer.byteLength(HIT_BODY)}`] : []),
  ];
  return Buffer.from(`${head.join('\r\n')}\r\n\r\n${kind === 'hit' ? HIT_BODY : ''}`);
}

/** node:http, for the few calls whose headers and body are read (warm-up and recording). */
function fullRequest(t: Pick<Target, 'host' | 'port'>, bytes: Buffer): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const [head, body] = bytes.toString('utf8').split('\r\n\r\n', 2) as [string, string];
    const [line, ...rest] = head.split('\r\n');
    const [method, p] = line!.split(' ');
    const headers = Object.fromEntries(rest.map((h) => [h.slice(0, h.indexOf(':')), h.slice(h.indexOf(':') + 2)]));
    const req = http.request({ host: t.host, port: t.port, method, path: p, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body === '' ? undefined : body);
  });
}

/**
 * A kept-alive HTTP/1.1 connection that writes prepared request bytes and reads only the status
 * and `content-length` of each answer: the load generator shares the two cores with the servers,
 * so it must cost far less per call than they do (its CPU is reported beside theirs).
 */
class RawConnection {
  private readonly socket: net.Socket;
  private buf: Buffer = Buffer.alloc(0);
  private waiting: ((status: number) => void) | undefined;
  private failed: ((err: Error) => void) | undefined;

  private constructor(socket: net.Socket) {
    this.socket = socket;
    socket.setNoDelay(true);
    socket.on('data', (c: Buffer) => {
      this.buf = this.buf.length === 0 ? c : Buffer.concat([this.buf, c]);
      this.parse();
    });
    socket.on('error', (err) => this.failed?.(err));
    socket.on('close', () => this.failed?.(new Error('connection closed')));
  }

  static open(t: Pick<Target, 'host' | 'port'>): Promise<RawConnection> {
    return new Promise((resolve, reject) => {
      const s = net.connect(t.port, t.host, () => resolve(new RawConnection(s)));
      s.once('error', reject);
    });
  }

  private parse(): void {
    const end = this.buf.indexOf('\r\n\r\n');
    if (end < 0 || this.waiting === undefined) return;
    const head = this.buf.toString('latin1', 0, end);
    const m = /\r\ncontent-length: *(\d+)/i.exec(head);
    if (m === null) throw new Error('bench: every answer here carries content-length');
    const total = end + 4 + Number(m[1]);
    if (this.buf.length < total) return;
    const status = Number(head.slice(9, 12));
    this.buf = this.buf.subarray(total);
    const w = this.waiting;
    this.waiting = undefined;
    w(status);
  }

  /** One request, its answer's status. */
  call(bytes: Buffer): Promise<number> {
    return new Promise((resolve, reject) => {
      this.waiting = resolve;
      this.failed = reject;
      this.socket.write(bytes);
    });
  }

  close(): void {
    this.socket.destroy();
  }
}

type Kind = 'hit' | 'ping';

/** Answers other than 200, by target, kind and status: printed, so a failure is never only a count. */
const notOk = new Map<string, number>();
function noteNotOk(t: Target, kind: Kind, status: number): void {
  const k = `${t.name} ${kind} ${status}`;
  notOk.set(k, (notOk.get(k) ?? 0) + 1);
}

/** One request at a time on one connection: per-request latency in ms. */
async function latency(t: Target, kind: Kind, n: number): Promise<{ samples: number[]; bad: number }> {
  const c = await RawConnection.open(t);
  const samples: number[] = [];
  let bad = 0;
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const status = await c.call(t[kind]);
    samples.push(performance.now() - t0);
    if (status !== 200) {
      bad += 1;
      noteNotOk(t, kind, status);
    }
  }
  c.close();
  return { samples, bad };
}

interface Run {
  perSec: number;
  done: number;
  bad: number;
  /** CPU seconds of the server and of this client over the run. */
  serverCpu: number;
  clientCpu: number;
  elapsed: number;
}

/** `connections` loops for `seconds`: answers per second, and the CPU it cost each side. */
async function throughput(t: Target, serverPid: number, kind: Kind, connections: number, seconds: number): Promise<Run> {
  const conns = await Promise.all(Array.from({ length: connections }, () => RawConnection.open(t)));
  let done = 0;
  let bad = 0;
  const s0 = cpuSecondsOf(serverPid);
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const end = t0 + seconds * 1000;
  await Promise.all(conns.map(async (c) => {
    while (performance.now() < end) {
      const status = await c.call(t[kind]);
      if (status === 200) done += 1;
      else {
        bad += 1;
        noteNotOk(t, kind, status);
      }
    }
  }));
  const elapsed = (performance.now() - t0) / 1000;
  const cu = process.cpuUsage(c0);
  const serverCpu = cpuSecondsOf(serverPid) - s0;
  for (const c of conns) c.close();
  return { perSec: done / elapsed, done, bad, serverCpu, clientCpu: (cu.user + cu.system) / 1e6, elapsed };
}

/** Runs `node --import tsx bench/run.ts edge --bare <answers file>` or `bin/tintype start`; resolves with the child and its port. */
function spawnUntilPort(cmd: string, argv: string[], env: NodeJS.ProcessEnv, pattern: RegExp, stderr: 'ignore' | number = 'ignore'): Promise<{ child: ChildProcess; port: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, argv, { env, stdio: ['ignore', 'pipe', stderr] });
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

/** The least an edge does: one pass-through hop to the bare server, upstream connections kept alive. */
function oneHop(upstreamPort: number): void {
  const agent = new http.Agent({ keepAlive: true });
  const server = http.createServer((req, res) => {
    const upstream = http.request({ host: '127.0.0.1', port: upstreamPort, method: req.method, path: req.url, headers: req.headers, agent }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => {
      res.statusCode = 502;
      res.end();
    });
    req.pipe(upstream);
  });
  server.listen(0, '127.0.0.1', () => process.stdout.write(`hop listening on ${(server.address() as AddressInfo).port}
`));
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

interface Pooled {
  samples: number[];
  hits: Run[];
  pings: Run[];
  bad: number;
}

/** Answers per second over pooled runs; CPU ms per answer of the server and the client. */
function summarise(runs: Run[]): { perSec: number; serverMsPerCall: number; clientMsPerCall: number; serverCores: number; clientCores: number } {
  const done = runs.reduce((a, r) => a + r.done, 0);
  const elapsed = runs.reduce((a, r) => a + r.elapsed, 0);
  const serverCpu = runs.reduce((a, r) => a + r.serverCpu, 0);
  const clientCpu = runs.reduce((a, r) => a + r.clientCpu, 0);
  return {
    perSec: done / elapsed,
    serverMsPerCall: (serverCpu * 1000) / Math.max(1, done),
    clientMsPerCall: (clientCpu * 1000) / Math.max(1, done),
    serverCores: serverCpu / elapsed,
    clientCores: clientCpu / elapsed,
  };
}

/** Milliseconds to the microsecond. */
const round3 = (ms: number): number => Math.round(ms * 1000) / 1000;
const pct = (edge: number, bare: number): number => round2(((edge - bare) / bare) * 100);

async function main(): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      seconds: { type: 'string', default: '8' },
      connections: { type: 'string', default: '16' },
      'latency-requests': { type: 'string', default: '2000' },
      // Writes a V8 CPU profile of the `tintype start` process into this directory at its exit.
      'cpu-prof': { type: 'string' },
      // Appends the service's log (stderr) to this file; by default it is dropped.
      'service-log': { type: 'string' },
    },
  });
  const seconds = Number(values.seconds);
  const connections = Number(values.connections);
  const latencyRequests = Number(values['latency-requests']);
  printMachine(CHROMIUM);
  const load0 = os.loadavg();

  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'tintype-bench-edge-'));
  const plansFile = path.join(dataDir, 'plans.json');
  writeFileSync(plansFile, JSON.stringify(PLANS));
  const env = { PATH: process.env.PATH, HOME: process.env.HOME, TINTYPE_DATA_DIR: dataDir, TINTYPE_PLANS: plansFile, CHROMIUM_PATH: CHROMIUM };
  const children: ChildProcess[] = [];
  let apart: Apart | undefined;
  try {
    const profileDir = values['cpu-prof'] === undefined ? undefined : path.resolve(values['cpu-prof']);
    const service = await spawnUntilPort('/usr/bin/env', startArgs(profileDir), { ...env, PORT: '0', TINTYPE_ADMIN_PORT: '0' }, START_PORT_PATTERN, values['service-log'] === undefined ? 'ignore' : openSync(values['service-log'], 'a'));
    children.push(service.child);
    const keyOut = await new Promise<string>((resolve, reject) => {
      const c = spawn('/usr/bin/env', ['-u', 'NODE_OPTIONS', TINTYPE, 'keys', 'create', '--plan', 'bench'], { env, stdio: ['ignore', 'pipe', 'ignore'] });
      let out = '';
      c.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')));
      c.once('close', (code) => (code === 0 ? resolve(out) : reject(new Error('keys create failed'))));
    });
    const secret = /^secret: (\S+)$/m.exec(keyOut)![1]!;
    const edge: Target = { name: 'edge', host: '127.0.0.1', port: service.port, hit: requestBytes(service.port, secret, 'hit'), ping: requestBytes(service.port, secret, 'ping') };

    // The first call renders; every later identical call is a hit. Record both answers for the baseline.
    const first = await fullRequest(edge, edge.hit);
    const aHit = await fullRequest(edge, edge.hit);
    const aPing = await fullRequest(edge, edge.ping);
    if (first.status !== 200 || aHit.headers[CACHE_HEADER] !== 'hit' || aPing.status !== 200) {
      throw new Error(`the service did not answer as expected: ${first.status}, x-cache ${String(aHit.headers[CACHE_HEADER])}, ping ${aPing.status}`);
    }
    const answersFile = path.join(dataDir, 'answers.json');
    writeFileSync(answersFile, JSON.stringify({
      'POST /v1/html-to-image': { status: 200, headers: replayable(aHit.headers), body: aHit.body.toString('base64') },
      'GET /v1/ping': { status: 200, headers: replayable(aPing.headers), body: aPing.body.toString('base64') },
    }));
    const bareProc = await spawnUntilPort(process.execPath, ['--import', 'tsx', path.join(HERE, 'run.ts'), 'edge', '--bare', answersFile], { ...env, NODE_OPTIONS: '' }, /bare listening on (\d+)/);
    children.push(bareProc.child);
    // The same request bytes (key included) go to the bare server.
    const bare: Target = { name: 'bare koa', host: '127.0.0.1', port: bareProc.port, hit: requestBytes(bareProc.port, secret, 'hit'), ping: requestBytes(bareProc.port, secret, 'ping') };
    const hopProc = await spawnUntilPort(process.execPath, ['--import', 'tsx', path.join(HERE, 'run.ts'), 'edge', '--hop', String(bare.port)], { ...env, NODE_OPTIONS: '' }, /hop listening on (\d+)/);
    children.push(hopProc.child);
    const hop: Target = { name: 'one hop', host: '127.0.0.1', port: hopProc.port, hit: requestBytes(hopProc.port, secret, 'hit'), ping: requestBytes(hopProc.port, secret, 'ping') };
    // The hop's server CPU is its own: what the hop adds to the bare server's.
    const pids = new Map([[edge.name, service.child.pid!], [bare.name, bareProc.child.pid!], [hop.name, hopProc.child.pid!]]);
    // The roles apart (test/e2e/apart.ts): the same requests through the embedded edge in a
    // namespace of its own, policy on PostgreSQL, two pod-isolated renderers, the Redis cache.
    // Its server CPU is the edge process's alone; the roles behind it spend theirs elsewhere.
    const targets = [edge, bare, hop];
    if (process.getuid?.() === 0) {
      apart = await startApart(1 + (process.pid % 250), { renderTimeoutMs: 30_000, slots: 2, plans: PLANS.plans });
      const apartKey = await apart.key('bench');
      const at: Target = { name: 'apart', host: apart.net.edgeAddr, port: ROLE_PORTS.edge, hit: requestBytes(ROLE_PORTS.edge, apartKey.secret, 'hit'), ping: requestBytes(ROLE_PORTS.edge, apartKey.secret, 'ping') };
      const warm = [await fullRequest(at, at.hit), await fullRequest(at, at.hit), await fullRequest(at, at.hit)];
      if (warm.some((a) => a.status !== 200) || warm.at(-1)!.headers[CACHE_HEADER] !== 'hit') {
        throw new Error(`the apart deployment did not answer as expected: ${warm.map((a) => `${a.status} ${String(a.headers[CACHE_HEADER])}`).join(', ')}`);
      }
      pids.set(at.name, apart.procs.edge.child.pid!);
      targets.push(at);
      console.log(`roles apart: edge at ${at.host}:${at.port}, two renderer pods, policy on PostgreSQL, Redis cache`);
    } else console.log('roles apart: skipped (network namespaces need root)');
    console.log(`tintype start on :${edge.port}; bare Koa on :${bare.port}, behind one hop on :${hop.port}; answer ${aHit.body.length} bytes; ${connections} connections, ${seconds} s of hits and of pings and ${latencyRequests} sequential hits per target, in ${ROUNDS} alternating rounds`);

    // Warm both, then measure in alternating rounds, so load from elsewhere on this shared
    // machine falls on both alike; samples and counts are pooled over the rounds.
    for (const t of targets) {
      await latency(t, 'hit', 300);
      await throughput(t, pids.get(t.name)!, 'hit', connections, 1);
    }
    const pooled = new Map<string, Pooled>();
    for (const t of targets) pooled.set(t.name, { samples: [], hits: [], pings: [], bad: 0 });
    for (let round = 0; round < ROUNDS; round++) {
      for (const t of round % 2 === 0 ? targets : [...targets].reverse()) {
        const acc = pooled.get(t.name)!;
        const l = await latency(t, 'hit', Math.ceil(latencyRequests / ROUNDS));
        const h = await throughput(t, pids.get(t.name)!, 'hit', connections, seconds / ROUNDS);
        const p = await throughput(t, pids.get(t.name)!, 'ping', connections, seconds / ROUNDS);
        acc.samples.push(...l.samples);
        acc.hits.push(h);
        acc.pings.push(p);
        acc.bad += l.bad + h.bad + p.bad;
      }
    }
    const load1 = os.loadavg();
    const figures = new Map<string, { hitP50: number; hitP99: number; hits: ReturnType<typeof summarise>; pings: ReturnType<typeof summarise>; bad: number }>();
    for (const t of [bare, hop, ...targets.filter((x) => x !== bare && x !== hop)]) {
      const acc = pooled.get(t.name)!;
      const f = { hitP50: percentile(acc.samples, 50), hitP99: percentile(acc.samples, 99), hits: summarise(acc.hits), pings: summarise(acc.pings), bad: acc.bad };
      figures.set(t.name, f);
      console.log(`${t.name.padEnd(9)} cache hit p50 ${round2(f.hitP50)} ms, p99 ${round2(f.hitP99)} ms; ${Math.round(f.hits.perSec)} hits/s; ${Math.round(f.pings.perSec)} pings/s; non-200 answers: ${f.bad}`);
      console.log(`${''.padEnd(9)} server CPU per hit ${round3(f.hits.serverMsPerCall)} ms (${round2(f.hits.serverCores)} cores busy), per ping ${round3(f.pings.serverMsPerCall)} ms; client CPU per hit ${round3(f.hits.clientMsPerCall)} ms (${round2(f.hits.clientCores)} cores)`);
    }
    for (const [k, n] of notOk) console.log(`not 200: ${k}: ${n}`);
    const e = figures.get('edge')!;
    const b = figures.get('bare koa')!;
    const h = figures.get('one hop')!;
    const added = {
      p50: pct(e.hitP50, b.hitP50),
      hopP50: pct(h.hitP50, b.hitP50),
      cpuPerHit: pct(e.hits.serverMsPerCall, b.hits.serverMsPerCall),
      hitsPerSec: pct(b.hits.perSec, e.hits.perSec),
    };
    console.log(`edge over bare: hit p50 +${added.p50} %, server CPU per hit +${added.cpuPerHit} %, time per hit at full load +${added.hitsPerSec} %`);
    console.log(`one pass-through hop over bare: hit p50 +${added.hopP50} % (the floor of any separate edge process, before authorization or metering)`);
    console.log(`load average before ${load0.map((x) => round2(x)).join(' ')}, after ${load1.map((x) => round2(x)).join(' ')}`);
    console.log(`targets: hit p50 ≤ 3 ms: ${e.hitP50 <= 3 ? 'met' : 'missed'}; ≥ 1,000 hits/s: ${e.hits.perSec >= 1000 ? 'met' : 'missed'}; edge adds ≤ 30 % (hit p50): ${added.p50 <= 30 ? 'met' : 'missed'}`);
    console.log(JSON.stringify({
      bench: 'edge',
      hit_p50_ms: round2(e.hitP50),
      hit_p99_ms: round2(e.hitP99),
      hits_per_s: Math.round(e.hits.perSec),
      pings_per_s: Math.round(e.pings.perSec),
      server_cpu_ms_per_hit: round3(e.hits.serverMsPerCall),
      server_cpu_ms_per_ping: round3(e.pings.serverMsPerCall),
      non_200: e.bad,
      non_200_by_status: Object.fromEntries(notOk),
      baseline: 'bare koa, same request and answer bytes',
      baseline_hit_p50_ms: round2(b.hitP50),
      baseline_hit_p99_ms: round2(b.hitP99),
      baseline_hits_per_s: Math.round(b.hits.perSec),
      baseline_pings_per_s: Math.round(b.pings.perSec),
      baseline_server_cpu_ms_per_hit: round3(b.hits.serverMsPerCall),
      edge_added_p50_pct: added.p50,
      edge_added_cpu_per_hit_pct: added.cpuPerHit,
      one_hop_hit_p50_ms: round2(h.hitP50),
      one_hop_hits_per_s: Math.round(h.hits.perSec),
      one_hop_cpu_ms_per_hit: round3(h.hits.serverMsPerCall),
      one_hop_added_p50_pct: added.hopP50,
      ...(figures.has('apart') ? {
        apart_hit_p50_ms: round2(figures.get('apart')!.hitP50),
        apart_hit_p99_ms: round2(figures.get('apart')!.hitP99),
        apart_hits_per_s: Math.round(figures.get('apart')!.hits.perSec),
        apart_pings_per_s: Math.round(figures.get('apart')!.pings.perSec),
        apart_edge_cpu_ms_per_hit: round3(figures.get('apart')!.hits.serverMsPerCall),
        apart_non_200: figures.get('apart')!.bad,
      } : {}),
      client_cpu_ms_per_hit: round3(e.hits.clientMsPerCall),
      client_cores_during_bare_hits: round2(b.hits.clientCores),
      load_avg_1m: [round2(load0[0]!), round2(load1[0]!)],
      connections,
      seconds,
    }));
  } finally {
    await apart?.stop();
    for (const c of children) c.kill('SIGTERM');
    await Promise.all(children.map((c) => new Promise((r) => (c.exitCode !== null ? r(null) : c.once('exit', r)))));
    rmSync(dataDir, { recursive: true, force: true });
  }
}

if (args[0] === '--bare') await bareServer(args[1]!);
else if (args[0] === '--hop') oneHop(Number(args[1]));
else await main();
