/**
 * What a caller gets at the spec's defaults (bench/render): `{html}` alone through `tintype
 * start`'s edge, html-to-image (1280 × 800 PNG) and pdf (A4, backgrounds printed), one and two
 * at a time, every call a cache miss. Beside it, in the same run:
 *
 * - the floor: bare puppeteer-core on the same Chromium, a fresh context and page per render at
 *   1280 × 800 with the same capture, none of tintype's walls. A CPU target below it cannot be met
 *   by anything tintype does around Chromium;
 * - the peer: browserless v2 (bench/peer.ts) on Debian's Chromium as it ships and launching the
 *   headless shell, the same documents and sizes through its `/screenshot` and `/pdf`.
 *
 * CPU per render is each side's own process tree, read from /proc and split by process kind
 * (bench/proc-cpu.ts): the machine is shared, so its total CPU says little about one side.
 */
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import puppeteer, { type Browser } from 'puppeteer-core';
import { percentile, round2 } from './machine.ts';
import { installPeer, type Peer, peerRender, PEER_VERSION, startPeer } from './peer.ts';
import { cpuDelta, type CpuByKind, cpuTotal, PROC_KINDS, treeCpuByKind, zeroCpu } from './proc-cpu.ts';
import { serviceRender, startService } from './service.ts';

type Kind = 'png' | 'pdf';

/** One side: how it renders, and its CPU so far by process kind. */
interface Side {
  name: string;
  render(kind: Kind, html: string): Promise<number>;
  cpu(): CpuByKind;
}

/** One side's figures for one kind and concurrency. */
export interface DefaultsFigures {
  per_s: number;
  p50_ms: number;
  p95_ms: number;
  p99_ms: number;
  cpu_ms: number;
  bytes: number;
  cpu_ms_by_kind: Record<string, number>;
}

let serial = 0;
/** The same receipt for every side, different every time so no cache answers. */
function receipt(): string {
  serial += 1;
  return `<!doctype html><html><body style="font-family:sans-serif;margin:24px">
<h1>Receipt ${serial}-${process.pid}</h1><p>Thank you for your order. Two items, shipped today.</p>
<table><tr><td>Widget</td><td>2</td><td>$4.00</td></tr><tr><td>Gadget</td><td>1</td><td>$9.50</td></tr></table>
</body></html>`;
}

interface Raw { samples: number[]; seconds: number; cpu: CpuByKind; count: number; bytes: number }

async function runSide(side: Side, kind: Kind, concurrency: number, count: number): Promise<Raw> {
  const samples: number[] = [];
  let next = 0;
  let bytes = 0;
  const cpu0 = side.cpu();
  const started = performance.now();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < count) {
      next += 1;
      const t0 = performance.now();
      const size = await side.render(kind, receipt());
      samples.push(performance.now() - t0);
      if (size < 100) throw new Error(`${side.name} ${kind} answered only ${size} bytes`);
      bytes += size;
    }
  }));
  return { samples, seconds: (performance.now() - started) / 1000, cpu: cpuDelta(cpu0, side.cpu()), count, bytes };
}

function figures(parts: Raw[]): DefaultsFigures {
  const count = parts.reduce((a, p) => a + p.count, 0);
  const seconds = parts.reduce((a, p) => a + p.seconds, 0);
  const cpu = parts.reduce((a, p) => {
    for (const k of PROC_KINDS) a[k] += p.cpu[k];
    return a;
  }, zeroCpu());
  const samples = parts.flatMap((p) => p.samples);
  const byKind: Record<string, number> = {};
  for (const k of PROC_KINDS) if (cpu[k] !== 0) byKind[k] = round2((cpu[k] * 1000) / count);
  return {
    per_s: round2(count / seconds), p50_ms: round2(percentile(samples, 50)), p95_ms: round2(percentile(samples, 95)), p99_ms: round2(percentile(samples, 99)),
    cpu_ms: round2((cpuTotal(cpu) * 1000) / count), bytes: Math.round(parts.reduce((a, p) => a + p.bytes, 0) / count), cpu_ms_by_kind: byKind,
  };
}

/** The floor: puppeteer-core, a fresh context and page per render, the same capture. */
function floorSide(browser: Browser): Side {
  const pid = browser.process()!.pid!;
  return {
    name: 'floor',
    async render(kind, html) {
      const context = await browser.createBrowserContext();
      try {
        const page = await context.newPage();
        await page.setViewport({ width: 1280, height: 800 });
        await page.setContent(html, { waitUntil: 'load' });
        if (kind === 'pdf') return (await page.pdf({ format: 'A4', printBackground: true })).byteLength;
        return (await page.screenshot({ type: 'png', captureBeyondViewport: false })).byteLength;
      } finally {
        await context.close();
      }
    },
    cpu() {
      const c = treeCpuByKind(pid);
      // This process drives the floor's Chromium: its own CPU is the floor's node side.
      const own = process.cpuUsage();
      c.node += (own.user + own.system) / 1e6;
      return c;
    },
  };
}

function loadLine(): string {
  try {
    return execFileSync('uptime', { encoding: 'utf8' }).trim();
  } catch {
    return 'uptime unavailable';
  }
}

/** What measureDefaults returns: the figures by side and `<kind>_c<n>`, and why the peer is absent. */
export interface DefaultsResult {
  sides: Record<string, Record<string, DefaultsFigures>>;
  peerSkipped: string | null;
  /** The machine's 1-minute load average before and after: what the other tenants were doing. */
  load: [number, number];
  /** The share of tintype's renders that found a prepared context ready (null: not readable). */
  preparedHitRatio: number | null;
}

/** The renderer's `tintype_render_contexts_total` by `prepared`, from the service's admin metrics. */
async function contextCounts(admin: string): Promise<{ prepared: number; made: number } | undefined> {
  try {
    const text = await (await fetch(`${admin}/metrics`)).text();
    const read = (v: string): number => Number(new RegExp(`^tintype_render_contexts_total\\{prepared="${v}"\\} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
    return { prepared: read('true'), made: read('false') };
  } catch {
    return undefined;
  }
}

/**
 * Measures every side at png and pdf, c=1 and c=2: `renders` per figure for tintype and the
 * floor, `peerRenders` for each browserless (0 skips the peer), each in two alternating halves.
 */
export async function measureDefaults(options: { chromium: string; slots: number; renders: number; peerRenders: number; skipPeerReason?: string }): Promise<DefaultsResult> {
  const load0 = os.loadavg()[0]!;
  console.log(`defaults: ${options.renders} renders per figure (tintype, floor), ${options.peerRenders} per browserless figure; load: ${loadLine()}`);
  let peerSkipped: string | null = options.skipPeerReason ?? (options.peerRenders <= 0 ? '--peer-renders 0 (smoke runs it so)' : null);
  if (peerSkipped === null) {
    // Only an unreachable registry excuses the peer: anything else is a bench that cannot
    // measure what it prints, and stops here rather than print nulls as figures.
    const absent = await installPeer();
    if (absent !== undefined && !absent.offline) throw new Error(`render: the browserless peer cannot be measured: ${absent.reason}`);
    peerSkipped = absent?.reason ?? null;
  }
  // Started together: the service's start-up is most of this part's time in a smoke run.
  const [started, launched] = await Promise.allSettled([
    startService(options.chromium, options.slots),
    puppeteer.launch({
      executablePath: options.chromium, pipe: true, headless: /headless[-_]shell/.test(options.chromium) ? 'shell' : true,
      args: process.getuid?.() === 0 ? ['--no-sandbox'] : [],
    }),
  ]);
  if (started.status === 'rejected' || launched.status === 'rejected') {
    if (started.status === 'fulfilled') await started.value.stop();
    if (launched.status === 'fulfilled') await launched.value.close();
    throw started.status === 'rejected' ? started.reason : (launched as PromiseRejectedResult).reason;
  }
  const service = started.value;
  const browser = launched.value;
  const peers: Array<{ name: string; peer: Peer }> = [];
  try {
    if (peerSkipped === null) {
      try {
        peers.push({ name: 'browserless', peer: await startPeer('/usr/bin/chromium', { concurrent: 2, shell: false }) });
        peers.push({ name: 'browserless_shell', peer: await startPeer('/usr/lib/chromium/chromium-headless-shell', { concurrent: 2, shell: true }) });
      } catch (err) {
        throw new Error(`render: the browserless peer cannot be measured: browserless ${PEER_VERSION} did not start: ${err instanceof Error ? err.message.slice(0, 1000) : String(err)}`);
      }
    }
    if (peerSkipped !== null) process.stderr.write(`render: the browserless comparison is skipped: ${peerSkipped}\n`);
    const ours: Side = { name: 'defaults', render: (k, h) => serviceRender(service, k, h), cpu: () => treeCpuByKind(service.child.pid!) };
    const sides: Array<{ side: Side; renders: number }> = [
      { side: ours, renders: options.renders },
      { side: floorSide(browser), renders: options.renders },
      ...peers.map(({ name, peer }) => ({
        side: { name, render: (k: Kind, h: string) => peerRender(peer, k, h), cpu: () => treeCpuByKind(peer.child.pid!) },
        renders: options.peerRenders,
      })),
    ];
    const out: Record<string, Record<string, DefaultsFigures>> = {};
    const contexts0 = await contextCounts(service.admin);
    for (const [kind, concurrency] of [['png', 1], ['png', 2], ['pdf', 1], ['pdf', 2]] as const) {
      const halves = new Map<string, Raw[]>();
      for (const { side, renders } of sides) {
        await runSide(side, kind, concurrency, Math.min(10, Math.max(1, Math.ceil(renders / 10))));
        halves.set(side.name, []);
      }
      // Alternating halves, so drift on a shared machine hits every side alike.
      for (let half = 0; half < 2; half++) {
        for (const { side, renders } of sides) halves.get(side.name)!.push(await runSide(side, kind, concurrency, Math.max(1, Math.round(renders / 2))));
      }
      const cells: string[] = [];
      for (const { side } of sides) {
        const f = figures(halves.get(side.name)!);
        (out[side.name] ??= {})[`${kind}_c${concurrency}`] = f;
        const split = Object.entries(f.cpu_ms_by_kind).map(([k, v]) => `${k} ${v}`).join(', ');
        cells.push(`${side.name} ${f.per_s}/s p50 ${f.p50_ms} ms p99 ${f.p99_ms} ms CPU ${f.cpu_ms} ms (${split}) ${f.bytes} B`);
      }
      console.log(`defaults ${kind} c=${concurrency}: ${cells.join(' | ')}`);
    }
    const contexts1 = await contextCounts(service.admin);
    let preparedHitRatio: number | null = null;
    if (contexts0 !== undefined && contexts1 !== undefined) {
      const prepared = contexts1.prepared - contexts0.prepared;
      const total = prepared + contexts1.made - contexts0.made;
      if (total > 0) preparedHitRatio = round2(prepared / total);
    }
    console.log(`defaults done; prepared contexts found by ${preparedHitRatio === null ? 'unknown' : preparedHitRatio * 100}% of tintype's renders; load: ${loadLine()}`);
    return { sides: out, peerSkipped, load: [round2(load0), round2(os.loadavg()[0]!)], preparedHitRatio };
  } finally {
    await browser.close().catch(() => undefined);
    await service.stop();
    for (const p of peers) await p.peer.stop();
  }
}

/** The JSON fields of the defaults part (docs/performance.md). */
export function defaultsJson(r: DefaultsResult): Record<string, unknown> {
  const d = r.sides['defaults']!;
  const fl = r.sides['floor']!;
  const bl = r.sides['browserless'];
  const sh = r.sides['browserless_shell'];
  const out: Record<string, unknown> = {};
  for (const key of ['png_c1', 'png_c2', 'pdf_c1', 'pdf_c2']) {
    out[`defaults_${key}_per_s`] = d[key]!.per_s;
    out[`defaults_${key}_p50_ms`] = d[key]!.p50_ms;
  }
  out.defaults_cpu_ms_per_png = d.png_c1!.cpu_ms;
  out.defaults_cpu_ms_per_png_c2 = d.png_c2!.cpu_ms;
  out.defaults_cpu_ms_per_pdf = d.pdf_c1!.cpu_ms;
  out.defaults_cpu_ms_per_png_by_kind = d.png_c1!.cpu_ms_by_kind;
  out.defaults_png_bytes = d.png_c1!.bytes;
  out.floor_cpu_ms_per_png = fl.png_c1!.cpu_ms;
  out.floor_cpu_ms_per_png_by_kind = fl.png_c1!.cpu_ms_by_kind;
  out.floor_cpu_ms_per_pdf = fl.pdf_c1!.cpu_ms;
  out.floor_png_c1_per_s = fl.png_c1!.per_s;
  out.floor_png_c1_p50_ms = fl.png_c1!.p50_ms;
  out.floor_png_c2_per_s = fl.png_c2!.per_s;
  out.defaults_png_c1_p99_ms = d.png_c1!.p99_ms;
  out.defaults_pdf_c1_p99_ms = d.pdf_c1!.p99_ms;
  out.floor_pdf_c1_p50_ms = fl.pdf_c1!.p50_ms;
  out.floor_pdf_c1_per_s = fl.pdf_c1!.per_s;
  out.floor_pdf_c2_per_s = fl.pdf_c2!.per_s;
  out.prepared_hit_ratio = r.preparedHitRatio;
  // The targets, as ratios to the floor in this same run (docs/performance.md "Latest figures").
  for (const kind of ['png', 'pdf'] as const) {
    const c1 = d[`${kind}_c1`]!;
    const f1 = fl[`${kind}_c1`]!;
    out[`ratio_${kind}_c1_p50_to_floor_p50`] = round2(c1.p50_ms / f1.p50_ms);
    out[`ratio_${kind}_c1_p99_to_floor_p50`] = round2(c1.p99_ms / f1.p50_ms);
    out[`ratio_${kind}_cpu_to_floor`] = round2(c1.cpu_ms / f1.cpu_ms);
    out[`ratio_${kind}_c1_per_s_to_floor`] = round2(c1.per_s / f1.per_s);
    out[`ratio_${kind}_c2_per_s_to_floor`] = round2(d[`${kind}_c2`]!.per_s / fl[`${kind}_c2`]!.per_s);
  }
  for (const [name, side] of [['browserless', bl], ['browserless_shell', sh]] as const) {
    for (const key of ['png_c1', 'png_c2', 'pdf_c1', 'pdf_c2']) out[`${name}_${key}_per_s`] = side?.[key]?.per_s ?? null;
    out[`${name}_png_c1_p50_ms`] = side?.png_c1?.p50_ms ?? null;
    out[`${name}_cpu_ms_per_png`] = side?.png_c1?.cpu_ms ?? null;
    out[`${name}_cpu_ms_per_pdf`] = side?.pdf_c1?.cpu_ms ?? null;
  }
  for (const key of ['png_c1', 'png_c2', 'pdf_c1', 'pdf_c2']) {
    out[`ratio_vs_browserless_${key}`] = bl === undefined ? null : round2(d[key]!.per_s / bl[key]!.per_s);
    out[`ratio_vs_browserless_shell_${key}`] = sh === undefined ? null : round2(d[key]!.per_s / sh[key]!.per_s);
  }
  out.peer = r.peerSkipped === null ? `browserless ${PEER_VERSION}` : null;
  out.peer_skipped = r.peerSkipped;
  out.defaults_load_avg_1m = r.load;
  return out;
}
