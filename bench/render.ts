/**
 * The renderer's cost (docs/performance.md "Running the benchmarks"): p50/p95 latency and renders/s of
 * html-to-image of a small document at concurrency 1 and 2, and of pdf, through the real
 * `bin/tintype renderer` process (own guard, netns isolation, a fresh context per render, the
 * file cache storing every answer), against a baseline measured in the same run: plain
 * puppeteer-core with the same Chromium binary, a new browser context and page per render, the
 * same concurrency. Then the renderer's memory after 500 renders, and its growth over them.
 *
 * Every request carries a distinct document, so nothing is served from the cache.
 * Memory is the renderer process tree (node with its OG drawing threads, Chromium, the relay):
 * RSS summed (an upper bound, as Chromium's processes share pages) and PSS summed (shared pages
 * divided among their users), and PSS split into the node process and everything below it. Where
 * a memory cgroup can be made (root), the renderer runs in one of its own, and the bench also
 * prints its working set and peak: memory as a container's limit counts it (bench/cgroup.ts).
 *
 * Each figure also carries the CPU each side spent per render (tintype: the renderer's whole
 * process tree; baseline: its Chromium plus this process driving it). Once both cores are busy,
 * renders/s is cores ÷ CPU per render, so the baseline's CPU per render over ours bounds the
 * ratio any pool can reach there; a fresh context's own cost in Chromium (a new renderer process,
 * the context's browser-side setup, compositing) is most of both sides' figure.
 *
 * Targets on 2 cores: ≥ 1.5× the baseline's renders/s, html-to-image p50 ≤ 100 ms,
 * memory ≤ 400 MB + 80 MB per slot with no growth over the 500 renders.
 *
 * `npm run bench -- render --phases [--renders N]` instead profiles one render in phases, through
 * the pool in this process (netns isolation, the real guard in-process, no HTTP, no cache): time
 * from asking for a render to its page work starting (taking a prepared context), each page step,
 * and from the work's end to the render's answer (cutting the lane, the final tally).
 *
 * First, what a caller gets at the spec's defaults through `tintype start`'s edge, beside the
 * floor (bare puppeteer at the same size and capture) and browserless v2 on the same Chromium
 * (bench/render-defaults.ts): `--defaults-renders N` per figure (default `--renders`),
 * `--peer-renders N` per browserless figure (0 skips the peer, as smoke does), `--defaults-only`
 * to stop after it. The peer is measured or the bench fails (non-zero, with the reason), unless
 * the npm registry cannot be reached. Targets on 2 cores, as ratios to the floor in the same run
 * (the machines are shared, so absolute figures vary by day): a default PNG at one at a time p50
 * ≤ 0.5× the floor's p50 and p99 ≤ 1.0× it, CPU per render ≤ 1.0× the floor's, renders/s ≥ 1.5×
 * the floor's (at two at a time not below the last measured ratio); the same for PDF.
 *
 * `npm run bench -- render [--renders N] [--memory-renders N] [--defaults-renders N] [--peer-renders N] [--defaults-only] [--phases]`
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import puppeteer, { type Browser } from 'puppeteer-core';
import { createLogger } from '../lib/log.ts';
import { createGuard, DnsFailure } from '../guard/index.ts';
import { chromiumExecutable, createBrowserPool, type RenderContext } from '../renderer/browser/index.ts';
import { descendants } from '../test/renderer/server/procs.ts';
import { createMemoryCgroup, type MemoryCgroup } from './cgroup.ts';
import { percentile, printMachine, round2, treeCpuSeconds } from './machine.ts';
import { generateKeyPairSync } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { leaseKeyText, leaseSigner } from '../lib/lease.ts';
import { newRendererToken } from '../lib/renderer-token.ts';
import { defaultsJson, measureDefaults } from './render-defaults.ts';
import { LEASE_HEADER } from '../lib/policy-contract.ts';

const { values: opts } = parseArgs({
  args: process.argv.slice(3),
  options: {
    renders: { type: 'string', default: '100' },
    'memory-renders': { type: 'string', default: '500' },
    phases: { type: 'boolean', default: false },
    'defaults-renders': { type: 'string' },
    'peer-renders': { type: 'string', default: '30' },
    'defaults-only': { type: 'boolean', default: false },
  },
});
const RENDERS = Number(opts.renders);
const MEMORY_RENDERS = Number(opts['memory-renders']);
const SLOTS = 2;
const TINTYPE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../bin/tintype');
const CHROMIUM = chromiumExecutable({ chromiumPath: process.env.CHROMIUM_PATH });

let serial = 0;
/** A small document, different every time so the cache never answers. */
function smallDocument(): string {
  serial += 1;
  return `<!doctype html><html><body style="font-family:sans-serif;margin:24px">
<h1>Receipt ${serial}</h1><p>Thank you for your order. Two items, shipped today.</p>
<table><tr><td>Widget</td><td>2</td><td>$4.00</td></tr><tr><td>Gadget</td><td>1</td><td>$9.50</td></tr></table>
</body></html>`;
}

type Kind = 'html-to-image' | 'pdf';
type RenderOnce = (kind: Kind, html: string) => Promise<number>;

interface Figures {
  p50_ms: number;
  p95_ms: number;
  per_s: number;
  /** CPU milliseconds the rendering side spent per render (see Side). */
  cpu_ms: number;
}

/**
 * One side of the comparison: how it renders, and the CPU seconds it has used so far. For
 * tintype that is the renderer's whole process tree (node, Chromium, the relay); for the
 * baseline, its Chromium's tree plus this process, which drives it through puppeteer. The
 * bench's own HTTP client is the caller, not the service, and is not counted.
 */
interface Side {
  render: RenderOnce;
  cpuSeconds(): number;
}

/** Runs `count` renders with `concurrency` workers; latency per render and renders/s overall. */
async function measure(side: Side, kind: Kind, concurrency: number, count: number): Promise<Figures> {
  const samples: number[] = [];
  let next = 0;
  const cpu0 = side.cpuSeconds();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        next += 1;
        const t0 = performance.now();
        const bytes = await side.render(kind, smallDocument());
        samples.push(performance.now() - t0);
        if (bytes < 100) throw new Error(`a ${kind} render answered only ${bytes} bytes`);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const cpuMs = ((side.cpuSeconds() - cpu0) * 1000) / count;
  return {
    p50_ms: round2(percentile(samples, 50)), p95_ms: round2(percentile(samples, 95)), per_s: round2(count / seconds), cpu_ms: round2(cpuMs),
  };
}

/** The lease key pair of the renderer under test; the bench signs its leases as policy would. */
const BENCH_LEASE_KEYS = generateKeyPairSync('ed25519');

/** Policy's renderer listener as the renderer under test sees it: every claim and settle answered 204. */
async function standInPolicy(): Promise<string> {
  const server = http.createServer((req, res) => {
    req.resume();
    req.once('end', () => res.writeHead(204).end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  server.unref();
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** The renderer under test: `bin/tintype renderer` with its own guard, on free ports. */
async function startRenderer(dir: string, cgroup: MemoryCgroup | undefined): Promise<{ child: ChildProcess; base: string; admin: string }> {
  const env = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: process.env.HOME ?? '/root',
    PORT: '0',
    TINTYPE_ADMIN_PORT: '0',
    TINTYPE_DATA_DIR: dir,
    TINTYPE_SLOTS: String(SLOTS),
    TINTYPE_LOG_LEVEL: 'info',
    CHROMIUM_PATH: CHROMIUM,
    TINTYPE_LEASE_PUBLIC_KEYS: leaseKeyText(BENCH_LEASE_KEYS.publicKey),
    TINTYPE_POLICY_URL: await standInPolicy(),
    // The stand-in takes any call; the renderer does not start without a token to send.
    TINTYPE_RENDERER_TOKEN: newRendererToken(),
  };
  const child = spawn('/usr/bin/env', ['-u', 'NODE_OPTIONS', TINTYPE, 'renderer'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  // Before it starts Chromium (node takes its time loading first), so the whole tree is counted.
  cgroup?.add(child.pid!);
  // The ports come from the `renderer.listening` log line; the log is drained (and dropped) after it.
  const ports = await new Promise<{ port: number; admin: number }>((resolve, reject) => {
    let buffered = '';
    let found = false;
    child.stderr!.on('data', (c: Buffer) => {
      if (found) return;
      buffered += c.toString('utf8');
      const m = /"event":"renderer\.listening".*?"port":(\d+),"admin_port":(\d+)/.exec(buffered);
      if (m !== null) {
        found = true;
        resolve({ port: Number(m[1]), admin: Number(m[2]) });
      }
    });
    child.once('exit', (code) => reject(new Error(`renderer exited ${code}: ${buffered.slice(-2000)}`)));
  });
  const base = `http://127.0.0.1:${ports.port}`;
  const admin = `http://127.0.0.1:${ports.admin}`;
  for (let i = 0; i < 600; i++) {
    if ((await fetch(`${admin}/healthz/ready`).catch(() => undefined))?.status === 200) return { child, base, admin };
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('the renderer did not become ready');
}

function rendererClient(base: string): RenderOnce {
  let lease = 0;
  const leases = leaseSigner(BENCH_LEASE_KEYS.privateKey);
  return async (kind, html) => {
    lease += 1;
    // Signed as policy signs a lease: the renderer checks every one before any work.
    const signed = leases.sign({ id: `bench-${lease}`, keyId: 'key_bench', operation: kind, expiresAt: Date.now() + 3_600_000 });
    const res = await fetch(`${base}/v1/${kind}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', [LEASE_HEADER]: signed },
      body: JSON.stringify(kind === 'pdf' ? { html } : { html, width: 800, height: 600 }),
    });
    const body = await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`${kind} answered ${res.status}: ${Buffer.from(body).toString('utf8').slice(0, 200)}`);
    return body.byteLength;
  };
}

/** The baseline: plain puppeteer, same binary, a new context and page per render. */
function baselineClient(browser: Browser): RenderOnce {
  return async (kind, html) => {
    const context = await browser.createBrowserContext();
    try {
      const page = await context.newPage();
      if (kind === 'pdf') {
        await page.setViewport({ width: 1280, height: 800 });
        await page.setContent(html, { waitUntil: 'load' });
        return (await page.pdf({ format: 'A4', printBackground: true })).byteLength;
      }
      await page.setViewport({ width: 800, height: 600 });
      await page.setContent(html, { waitUntil: 'load' });
      return (await page.screenshot({ type: 'png' })).byteLength;
    } finally {
      await context.close();
    }
  };
}

interface Memory {
  rssMb: number;
  pssMb: number;
  /** PSS of the renderer's own node process (server, cache, OG drawing threads). */
  nodePssMb: number;
  /** PSS of everything under it: Chromium, its namespace relay. */
  browserPssMb: number;
  processes: number;
}

/** Summed RSS and PSS (MiB) of `pid` and all its descendants, from /proc. */
function treeMemory(pid: number): Memory {
  const tree = [pid, ...descendants(pid)];
  let rss = 0;
  let pss = 0;
  let nodePss = 0;
  for (const p of tree) {
    try {
      const rollup = readFileSync(`/proc/${p}/smaps_rollup`, 'utf8');
      const pssKb = Number(/^Pss:\s+(\d+) kB/m.exec(rollup)?.[1] ?? 0);
      rss += Number(/^Rss:\s+(\d+) kB/m.exec(rollup)?.[1] ?? 0);
      pss += pssKb;
      if (p === pid) nodePss = pssKb;
    } catch {
      // gone meanwhile
    }
  }
  return {
    rssMb: round2(rss / 1024), pssMb: round2(pss / 1024), nodePssMb: round2(nodePss / 1024),
    browserPssMb: round2((pss - nodePss) / 1024), processes: tree.length,
  };
}

/** The pool's phases, in milliseconds per render (see the file comment). */
async function profilePhases(): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tintype-bench-phases-'));
  const logger = createLogger('bench', { level: 'error', sink: () => {} });
  const socketPath = path.join(dir, 'guard.sock');
  const guard = createGuard({
    socket: socketPath,
    logger,
    allowCidrs: [],
    resolve: async () => {
      throw new DnsFailure('ENOTFOUND');
    },
    stopGraceMs: 200,
  });
  await guard.start();
  const pool = createBrowserPool({
    config: {
      chromiumPath: CHROMIUM, slots: SLOTS, renderTimeoutMs: 30_000, recycleAfterRenders: 100_000,
      browserMaxRssMb: 8_192, isolation: 'netns', guardAllowCidrs: [], maxOutputBytes: 1_073_741_824,
    },
    logger,
    guard: { socketPath, tokens: guard.tokens, takeTally: (token) => guard.settledTally(token) },
  });
  const out: Record<string, number> = {};
  try {
    await pool.start();
    for (const kind of ['html-to-image', 'pdf'] as const) {
      const phases: Record<string, number[]> = {};
      const note = (name: string, since: number): number => {
        const now = performance.now();
        (phases[name] ??= []).push(now - since);
        return now;
      };
      // The hot path's own steps (renderer/operations: html-to-image and pdf at their defaults).
      const steps = async (ctx: RenderContext, html: string): Promise<void> => {
        let at = performance.now();
        await ctx.cdp.setViewport(kind === 'pdf' ? { width: 1280, height: 800, deviceScaleFactor: 1 } : { width: 800, height: 600, deviceScaleFactor: 1 });
        at = note('set_viewport', at);
        await ctx.cdp.writeMarkup(html, 'load', ctx.signal);
        at = note('set_content', at);
        if (kind === 'pdf') {
          const { stream } = await ctx.cdp.session.send('Page.printToPDF', { transferMode: 'ReturnAsStream', printBackground: true });
          for (let eof = false; !eof;) eof = (await ctx.cdp.session.send('IO.read', { handle: stream! })).eof;
        } else {
          await ctx.cdp.session.send('Page.captureScreenshot', { format: 'png', captureBeyondViewport: false });
        }
        note('capture', at);
      };
      for (let i = 0; i < 10 + RENDERS; i++) {
        if (i === 10) for (const k of Object.keys(phases)) phases[k] = [];
        const asked = performance.now();
        let workEnded = 0;
        await pool.render({
          deadline: Date.now() + 30_000,
          run: async (ctx) => {
            note('to_page_work', asked);
            await steps(ctx, smallDocument());
            workEnded = performance.now();
          },
        });
        note('after_page_work', workEnded);
        note('total', asked);
      }
      const cells: string[] = [];
      for (const [name, samples] of Object.entries(phases)) {
        const p50 = round2(percentile(samples, 50));
        const mean = round2(samples.reduce((a, b) => a + b, 0) / samples.length);
        out[`${kind.replace(/-/g, '_')}_${name}_p50_ms`] = p50;
        out[`${kind.replace(/-/g, '_')}_${name}_mean_ms`] = mean;
        cells.push(`${name} p50 ${p50} (mean ${mean})`);
      }
      console.log(`${kind} phases, ms over ${RENDERS} renders at c=1: ${cells.join(', ')}`);
    }
  } finally {
    await pool.stop();
    await guard.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(JSON.stringify({ bench: 'render-phases', renders: RENDERS, ...out }));
}

printMachine(CHROMIUM);
if (opts.phases) {
  await profilePhases();
  process.exit(0);
}
const defaults = await measureDefaults({
  chromium: CHROMIUM, slots: SLOTS, renders: Number(opts['defaults-renders'] ?? RENDERS), peerRenders: Number(opts['peer-renders']),
});
if (opts['defaults-only']) {
  console.log(JSON.stringify({ bench: 'render', renders: RENDERS, slots: SLOTS, ...defaultsJson(defaults) }));
  process.exit(0);
}
console.log(`renders per figure: ${RENDERS} (after 10 warm-up renders); slots: ${SLOTS}; memory after ${MEMORY_RENDERS} renders`);

const dir = mkdtempSync(path.join(os.tmpdir(), 'tintype-bench-render-'));
const cgroup = createMemoryCgroup('tintype-bench-render');
const renderer = await startRenderer(dir, cgroup);
const browser = await puppeteer.launch({
  executablePath: CHROMIUM,
  pipe: true,
  headless: /headless[-_]shell/.test(CHROMIUM) ? 'shell' : true,
  args: process.getuid?.() === 0 ? ['--no-sandbox'] : [],
});

try {
  const ours: Side = { render: rendererClient(renderer.base), cpuSeconds: () => treeCpuSeconds(renderer.child.pid!) };
  const browserPid = browser.process()!.pid!;
  const theirs: Side = {
    render: baselineClient(browser),
    cpuSeconds: () => {
      const own = process.cpuUsage();
      return treeCpuSeconds(browserPid) + (own.user + own.system) / 1e6;
    },
  };
  const results: Record<string, { tintype: Figures; baseline: Figures; ratio: number; cpuRatio: number }> = {};
  for (const [kind, concurrency] of [['html-to-image', 1], ['html-to-image', 2], ['pdf', 1], ['pdf', 2]] as const) {
    await measure(ours, kind, concurrency, 10);
    await measure(theirs, kind, concurrency, 10);
    // Alternate halves so drift on a shared machine hits both sides alike.
    const a1 = await measure(ours, kind, concurrency, RENDERS / 2);
    const b1 = await measure(theirs, kind, concurrency, RENDERS / 2);
    const a2 = await measure(ours, kind, concurrency, RENDERS / 2);
    const b2 = await measure(theirs, kind, concurrency, RENDERS / 2);
    const merge = (x: Figures, y: Figures): Figures => ({
      p50_ms: round2((x.p50_ms + y.p50_ms) / 2), p95_ms: round2(Math.max(x.p95_ms, y.p95_ms)), per_s: round2((x.per_s + y.per_s) / 2),
      cpu_ms: round2((x.cpu_ms + y.cpu_ms) / 2),
    });
    const tintype = merge(a1, a2);
    const baseline = merge(b1, b2);
    const ratio = round2(tintype.per_s / baseline.per_s);
    // With every core busy, renders/s is cores ÷ CPU per render: this is the most either side
    // can lead by once the machine is saturated, whatever the pool does.
    const cpuRatio = round2(baseline.cpu_ms / tintype.cpu_ms);
    results[`${kind}_c${concurrency}`] = { tintype, baseline, ratio, cpuRatio };
    console.log(
      `${kind.padEnd(13)} c=${concurrency}: tintype p50 ${tintype.p50_ms} ms, p95 ${tintype.p95_ms} ms, ${tintype.per_s}/s, CPU ${tintype.cpu_ms} ms/render | ` +
        `baseline p50 ${baseline.p50_ms} ms, p95 ${baseline.p95_ms} ms, ${baseline.per_s}/s, CPU ${baseline.cpu_ms} ms/render | ` +
        `${ratio}× renders/s; baseline CPU per render ÷ ours ${cpuRatio}`,
    );
  }
  await browser.close();

  // Memory: a first reading after 50 renders, the last after MEMORY_RENDERS, html-to-image at c=2.
  const pid = renderer.child.pid!;
  await measure(ours, 'html-to-image', SLOTS, 50);
  await new Promise((r) => setTimeout(r, 1000));
  const early = treeMemory(pid);
  const earlyWorkingSet = cgroup?.workingSetBytes();
  await measure(ours, 'html-to-image', SLOTS, MEMORY_RENDERS - 50);
  await new Promise((r) => setTimeout(r, 1000));
  const late = treeMemory(pid);
  const lateWorkingSet = cgroup?.workingSetBytes();
  const peak = cgroup?.peakBytes();
  const mib = (bytes: number | undefined): number | null => (bytes === undefined ? null : round2(bytes / 1048576));
  const boundMb = 400 + 80 * SLOTS;
  const line = (m: Memory): string =>
    `RSS ${m.rssMb} MiB, PSS ${m.pssMb} MiB (node ${m.nodePssMb} with its OG threads, Chromium and relay ${m.browserPssMb}; ${m.processes} processes)`;
  console.log(`renderer memory after 50 renders: ${line(early)}`);
  console.log(`renderer memory after ${MEMORY_RENDERS} renders: ${line(late)}; bound ${boundMb} MB`);
  console.log(cgroup === undefined
    ? 'as a container limit counts it: not measured here (no writable memory cgroup)'
    : `as a container limit counts it (cgroup working set): ${mib(earlyWorkingSet)} MiB after 50 renders, ` +
      `${mib(lateWorkingSet)} MiB after ${MEMORY_RENDERS}, peak usage over the whole run ${mib(peak) ?? 'not kept by this kernel'} MiB`);

  const h1 = results['html-to-image_c1']!;
  const h2 = results['html-to-image_c2']!;
  console.log(
    JSON.stringify({
      bench: 'render',
      renders: RENDERS,
      slots: SLOTS,
      html_to_image_c1_p50_ms: h1.tintype.p50_ms,
      html_to_image_c1_p95_ms: h1.tintype.p95_ms,
      html_to_image_c1_per_s: h1.tintype.per_s,
      html_to_image_c2_p50_ms: h2.tintype.p50_ms,
      html_to_image_c2_p95_ms: h2.tintype.p95_ms,
      html_to_image_c2_per_s: h2.tintype.per_s,
      pdf_c1_p50_ms: results['pdf_c1']!.tintype.p50_ms,
      pdf_c1_per_s: results['pdf_c1']!.tintype.per_s,
      pdf_c2_p50_ms: results['pdf_c2']!.tintype.p50_ms,
      pdf_c2_per_s: results['pdf_c2']!.tintype.per_s,
      baseline: 'puppeteer-core, same Chromium, new context and page per render',
      baseline_html_to_image_c1_p50_ms: h1.baseline.p50_ms,
      baseline_html_to_image_c1_per_s: h1.baseline.per_s,
      baseline_html_to_image_c2_p50_ms: h2.baseline.p50_ms,
      baseline_html_to_image_c2_per_s: h2.baseline.per_s,
      baseline_pdf_c1_per_s: results['pdf_c1']!.baseline.per_s,
      baseline_pdf_c2_per_s: results['pdf_c2']!.baseline.per_s,
      ratio_html_to_image_c1: h1.ratio,
      ratio_html_to_image_c2: h2.ratio,
      ratio_pdf_c1: results['pdf_c1']!.ratio,
      ratio_pdf_c2: results['pdf_c2']!.ratio,
      cpu_ms_per_render_html_to_image: h2.tintype.cpu_ms,
      cpu_ms_per_render_pdf: results['pdf_c2']!.tintype.cpu_ms,
      baseline_cpu_ms_per_render_html_to_image: h2.baseline.cpu_ms,
      baseline_cpu_ms_per_render_pdf: results['pdf_c2']!.baseline.cpu_ms,
      cpu_ratio_html_to_image_c2: h2.cpuRatio,
      cpu_ratio_pdf_c2: results['pdf_c2']!.cpuRatio,
      memory_renders: MEMORY_RENDERS,
      rss_mb_after_50: early.rssMb,
      rss_mb_after_all: late.rssMb,
      pss_mb_after_50: early.pssMb,
      pss_mb_after_all: late.pssMb,
      node_pss_mb_after_all: late.nodePssMb,
      browser_pss_mb_after_all: late.browserPssMb,
      memory_bound_mb: boundMb,
      container_working_set_mb_after_50: mib(earlyWorkingSet),
      container_working_set_mb_after_all: mib(lateWorkingSet),
      container_peak_mb: mib(peak),
      ...defaultsJson(defaults),
    }),
  );
} finally {
  if (browser.connected) await browser.close();
  renderer.child.kill('SIGTERM');
  await new Promise((r) => renderer.child.once('exit', r));
  cgroup?.remove();
  rmSync(dir, { recursive: true, force: true });
}
