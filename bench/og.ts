/**
 * The OG card's cost (docs/performance.md "Running the benchmarks"): p50/p95 per uncached card and cards
 * per second on the drawing pool (2 threads), beside satori + resvg drawing an equivalent card
 * (same size, same layout, same Noto Sans faces) in the same run. Targets: p50 ≤ 20 ms per card,
 * ≥ 60 cards/s on 2 cores, and faster than satori + resvg.
 *
 * Every card differs (a counter in the title), so no answer is a cache hit; glyph masks stay warm
 * as they do in a running renderer. Latency is one card at a time; throughput keeps
 * `--concurrency` cards in flight. The baseline runs on the same number of worker threads.
 *
 * Memory (the renderer's RSS bound includes these threads): one drawing thread's heap
 * (`process.memoryUsage()` inside it) and what it adds to the process's PSS (smaps_rollup), warm
 * on Latin cards and after one card of every script; and the process's PSS with the pool idle
 * after `start()` and after the throughput run (every thread started).
 *
 * `npm run bench -- og [--cards N] [--baseline-cards N] [--concurrency N]`
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { Worker } from 'node:worker_threads';
import { createOgPool, DRAWING_THREAD_LIMITS } from '../renderer/og/pool.ts';
import type { OgCard } from '../renderer/og/fields.ts';
import { SCRIPTS, fullCard } from '../renderer/og/samples.ts';
import { percentile, printMachine, round2 } from './machine.ts';

const { values: opts } = parseArgs({
  args: process.argv.slice(3),
  options: {
    cards: { type: 'string', default: '400' },
    'baseline-cards': { type: 'string', default: '80' },
    concurrency: { type: 'string', default: '8' },
    threads: { type: 'string', default: '2' },
  },
});
const CARDS = Number(opts.cards);
const BASELINE_CARDS = Number(opts['baseline-cards']);
const CONCURRENCY = Number(opts.concurrency);
const THREADS = Number(opts.threads);
const require = createRequire(import.meta.url);

const latin = SCRIPTS.latin!;
const cardNo = (i: number): OgCard => ({ ...fullCard('title', 'dark', latin), title: `${latin.title} #${i}` });

/** PSS of this process in MB (every thread counted), from /proc/self/smaps_rollup. */
function pssMb(): number {
  const m = /^Pss:\s+(\d+) kB/m.exec(readFileSync('/proc/self/smaps_rollup', 'utf8'));
  return m === null ? NaN : Number(m[1]) / 1024;
}

interface ThreadMemory {
  label: string;
  heapUsedMb: number;
  externalMb: number;
  /** What the thread adds to the process's PSS. */
  pssMb: number;
}

// One drawing thread set up as the pool sets one up (tsx registered, then draw.ts), measured
// from inside after a collection: bare, warm, after cards in every script.
const MEMORY_WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const { readFileSync } = require('node:fs');
const pss = () => Number(/^Pss:\\s+(\\d+) kB/m.exec(readFileSync('/proc/self/smaps_rollup', 'utf8'))[1]) / 1024;
const mb = (n) => n / 1048576;
// A worker cannot be given --expose-gc; the flag set at run time exposes gc to a new context.
require('node:v8').setFlagsFromString('--expose-gc');
const gc = require('node:vm').runInNewContext('gc');
const take = (label) => {
  gc();
  const m = process.memoryUsage();
  return { label, heapUsedMb: mb(m.heapUsed), externalMb: mb(m.external), pss: pss() };
};
import(workerData.tsx).then(async (m) => {
  m.register();
  const draw = await import(workerData.draw);
  const samples = await import(workerData.samples);
  const out = [take('bare thread (tsx, modules loaded)')];
  draw.warmUp();
  for (let i = 0; i < 20; i++) draw.drawCard({ ...samples.fullCard('title', 'dark', samples.SCRIPTS.latin), title: 'card ' + i });
  out.push(take('warm, Latin cards only'));
  // The first CJK card reads the CJK face (lazy faces): its cost, once per thread.
  const t0 = performance.now();
  draw.drawCard(samples.fullCard('title', 'dark', samples.SCRIPTS.cjk));
  const firstCjkMs = performance.now() - t0;
  for (const name of Object.keys(samples.SCRIPTS)) {
    for (const template of ['title', 'stat', 'board']) draw.drawCard(samples.fullCard(template, 'dark', samples.SCRIPTS[name]));
  }
  out.push(take('after one card per template in every script'));
  parentPort.postMessage({ rows: out, firstCjkMs });
});
`;

async function threadMemory(): Promise<{ rows: ThreadMemory[]; firstCjkMs: number }> {
  const before = pssMb();
  const w = new Worker(MEMORY_WORKER, {
    eval: true,
    resourceLimits: DRAWING_THREAD_LIMITS,
    workerData: {
      tsx: import.meta.resolve('tsx/esm/api'),
      draw: new URL('../renderer/og/draw.ts', import.meta.url).href,
      samples: new URL('../renderer/og/samples.ts', import.meta.url).href,
    },
  });
  try {
    type Row = { label: string; heapUsedMb: number; externalMb: number; pss: number };
    const got = await new Promise<{ rows: Row[]; firstCjkMs: number }>((resolve, reject) => {
      w.once('message', resolve);
      w.once('error', reject);
    });
    const rows = got.rows.map((r) => ({ label: r.label, heapUsedMb: r.heapUsedMb, externalMb: r.externalMb, pssMb: r.pss - before }));
    return { rows, firstCjkMs: got.firstCjkMs };
  } finally {
    await w.terminate();
  }
}

function summary(samples: number[]): { p50: number; p95: number; mean: number } {
  return { p50: percentile(samples, 50), p95: percentile(samples, 95), mean: samples.reduce((a, b) => a + b, 0) / samples.length };
}

/** CPU milliseconds the whole process (every thread) spent since `from`. */
function cpuMs(from: NodeJS.CpuUsage): number {
  const u = process.cpuUsage(from);
  return (u.user + u.system) / 1000;
}

interface Figures {
  p50: number;
  p95: number;
  perS: number;
  /** CPU time per card over the throughput run, all threads counted. */
  cpuMsPerCard: number;
  /** Process PSS: before the pool, once started (idle), after the throughput run. */
  pss?: { before: number; started: number; startedThreads: number; busy: number; busyThreads: number };
}

async function ours(): Promise<Figures> {
  const pool = createOgPool({ threads: THREADS, maxQueue: CONCURRENCY * 2 });
  const pssBefore = pssMb();
  await pool.start();
  const pssStarted = pssMb();
  const startedThreads = pool.stats().threads;
  try {
    // Start every thread before timing, as a busy renderer has them.
    await Promise.all(Array.from({ length: THREADS * 4 }, (_, i) => pool.draw(cardNo(-1000 - i))));
    for (let i = 0; i < 40; i++) await pool.draw(cardNo(-i)); // warm glyph masks on both threads
    const samples: number[] = [];
    for (let i = 0; i < CARDS; i++) {
      const t0 = performance.now();
      await pool.draw(cardNo(i));
      samples.push(performance.now() - t0);
    }
    let next = 0;
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
      while (next < CARDS) await pool.draw(cardNo(CARDS + next++));
    }));
    const perS = CARDS / ((performance.now() - t0) / 1000);
    const cpuMsPerCard = cpuMs(c0) / CARDS;
    const s = summary(samples);
    const pss = { before: pssBefore, started: pssStarted, startedThreads, busy: pssMb(), busyThreads: pool.stats().threads };
    return { p50: s.p50, p95: s.p95, perS, cpuMsPerCard, pss };
  } finally {
    await pool.stop();
  }
}

// The baseline in plain JavaScript on worker threads: satori lays the card out to SVG with the
// same Noto Sans files, resvg rasterizes it to PNG. The card mirrors the `title` template.
const BASELINE_WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const { readFileSync } = require('node:fs');
(async () => {
  const satori = (await import(workerData.satori)).default;
  const { Resvg } = require(workerData.resvg);
  const fonts = [
    { name: 'Noto Sans', data: readFileSync(workerData.bold), weight: 700, style: 'normal' },
    { name: 'Noto Sans', data: readFileSync(workerData.regular), weight: 400, style: 'normal' },
  ];
  const t = workerData.texts;
  const div = (style, children) => ({ type: 'div', props: { style: { display: 'flex', ...style }, children } });
  const card = (title) => div({ width: 1200, height: 630, flexDirection: 'column', fontFamily: 'Noto Sans',
      background: 'linear-gradient(160deg, #111827, #0b0f1a)', borderLeft: '12px solid #818cf8', padding: '64px 80px 64px 68px' }, [
    div({ color: '#818cf8', fontSize: 26, fontWeight: 700 }, t.kicker),
    div({ color: '#f8fafc', fontSize: 76, fontWeight: 700, lineHeight: 1.14, marginTop: 20, lineClamp: 3 }, title),
    div({ color: '#94a3b8', fontSize: 34, lineHeight: 1.32, marginTop: 22, lineClamp: 2 }, t.subtitle),
    div({ flexGrow: 1 }, []),
    div({ borderTop: '2px solid #273348', paddingTop: 22, justifyContent: 'space-between', fontSize: 26 }, [
      div({ color: '#94a3b8' }, t.footer),
      div({ color: '#f8fafc', fontWeight: 700 }, t.brand),
    ]),
  ]);
  const draw = async (i) => {
    const svg = await satori(card(t.title + ' #' + i), { width: 1200, height: 630, fonts });
    return new Resvg(svg, { fitTo: { mode: 'original' } }).render().asPng();
  };
  for (let i = 0; i < 5; i++) await draw(-1 - i);
  parentPort.postMessage({ ready: true });
  parentPort.on('message', async ({ from, count }) => {
    const times = [];
    let bytes = 0;
    for (let i = from; i < from + count; i++) {
      const t0 = performance.now();
      bytes = (await draw(i)).length;
      times.push(performance.now() - t0);
    }
    parentPort.postMessage({ times, bytes });
  });
})();
`;

function baselineWorker(): Promise<Worker> {
  const w = new Worker(BASELINE_WORKER, {
    eval: true,
    workerData: {
      satori: import.meta.resolve('satori'),
      resvg: require.resolve('@resvg/resvg-js'),
      bold: '/usr/share/fonts/truetype/noto/NotoSans-Bold.ttf',
      regular: '/usr/share/fonts/truetype/noto/NotoSans-Regular.ttf',
      texts: latin,
    },
  });
  return new Promise((resolve, reject) => {
    w.once('message', () => resolve(w));
    w.once('error', reject);
  });
}

function run(w: Worker, from: number, count: number): Promise<{ times: number[]; bytes: number }> {
  return new Promise((resolve) => {
    w.once('message', resolve);
    w.postMessage({ from, count });
  });
}

async function baseline(): Promise<Figures> {
  const workers = await Promise.all(Array.from({ length: THREADS }, () => baselineWorker()));
  try {
    const one = await run(workers[0]!, 0, BASELINE_CARDS);
    const share = Math.ceil(BASELINE_CARDS / THREADS);
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    await Promise.all(workers.map((w, k) => run(w, BASELINE_CARDS + k * share, share)));
    const perS = (share * THREADS) / ((performance.now() - t0) / 1000);
    const cpuMsPerCard = cpuMs(c0) / (share * THREADS);
    const s = summary(one.times);
    return { p50: s.p50, p95: s.p95, perS, cpuMsPerCard };
  } finally {
    await Promise.all(workers.map((w) => w.terminate()));
  }
}

const machine = printMachine();
const versions = {
  satori: (JSON.parse(readFileSync(require.resolve('satori/package.json'), 'utf8')) as { version: string }).version,
  resvg: (JSON.parse(readFileSync(require.resolve('@resvg/resvg-js/package.json'), 'utf8')) as { version: string }).version,
};
console.log(`og: ${CARDS} cards (title template, every one different), ${THREADS} drawing threads, ${CONCURRENCY} in flight; baseline satori ${versions.satori} + resvg ${versions.resvg}, ${BASELINE_CARDS} cards`);
// On a shared, busy machine wall-clock throughput says more about the neighbours than about
// the drawing; CPU time per card gives what the cores would do if the drawing had them alone.
const capacity = (f: Figures) => (machine.cores * 1000) / f.cpuMsPerCard;
const line = (name: string, f: Figures) =>
  console.log(`${name} p50 ${round2(f.p50)} ms  p95 ${round2(f.p95)} ms  ${round2(f.perS)} cards/s  ` +
    `(${round2(f.cpuMsPerCard)} CPU ms a card: ${round2(capacity(f))} cards/s on ${machine.cores} idle cores)`);
console.log(`load average before: ${os.loadavg().map(round2).join(' ')}`);
// Memory first, on a process that has started no other thread yet.
const { rows: mem, firstCjkMs } = await threadMemory();
const a = await ours();
line('tintype pool    ', a);
const b = await baseline();
line('satori + resvg  ', b);
for (const m of mem) {
  console.log(`one drawing thread, ${m.label}: heap ${round2(m.heapUsedMb)} MB, external ${round2(m.externalMb)} MB, +${round2(m.pssMb)} MB process PSS`);
}
console.log(`one drawing thread, first CJK card (reads the CJK face): ${round2(firstCjkMs)} ms`);
const p = a.pss!;
console.log(`process PSS: ${round2(p.before)} MB before the pool, ${round2(p.started)} MB started (${p.startedThreads} thread), ` +
  `${round2(p.busy)} MB after the throughput run (${p.busyThreads} threads)`);
const warm = mem[1]!;
const all = mem[2]!;
console.log(`targets: p50 <= 20 ms ${a.p50 <= 20 ? 'met' : 'MISSED'}; >= 60 cards/s ${a.perS >= 60 ? 'met' : 'MISSED'}; faster than the baseline ${a.p50 < b.p50 && a.perS > b.perS ? 'met' : 'MISSED'} (${round2(b.p50 / a.p50)}x per card, ${round2(a.perS / b.perS)}x cards/s)`);
console.log(JSON.stringify({
  bench: 'og', cores: machine.cores, threads: THREADS, cards: CARDS,
  p50_ms: round2(a.p50), p95_ms: round2(a.p95), per_s: round2(a.perS),
  baseline: 'satori+resvg', baseline_p50_ms: round2(b.p50), baseline_p95_ms: round2(b.p95), baseline_per_s: round2(b.perS),
  cpu_ms_per_card: round2(a.cpuMsPerCard), per_s_cpu_bound: round2(capacity(a)),
  baseline_cpu_ms_per_card: round2(b.cpuMsPerCard), baseline_per_s_cpu_bound: round2(capacity(b)),
  speedup_p50: round2(b.p50 / a.p50), speedup_per_s: round2(a.perS / b.perS), load_average: round2(os.loadavg()[0]!),
  first_cjk_card_ms: round2(firstCjkMs), thread_heap_mb_warm: round2(warm.heapUsedMb), thread_pss_mb_warm: round2(warm.pssMb),
  thread_heap_mb_all_scripts: round2(all.heapUsedMb), thread_pss_mb_all_scripts: round2(all.pssMb),
  process_pss_mb_before_pool: round2(p.before), process_pss_mb_started: round2(p.started), threads_started: p.startedThreads,
  process_pss_mb_busy: round2(p.busy), threads_busy: p.busyThreads,
}));
