/**
 * The drawing pool (speed: docs/performance.md): drawing a card blocks its thread for milliseconds, so cards
 * are drawn on worker threads, never on the event loop that serves requests. Everything is
 * bounded: threads, the queue (one more card is 503 `busy`, spec Part 7) and
 * each card's time from arrival to answer (waiting included). A thread that crashes or overruns
 * is replaced; the card it held is answered 502 `render_failed` or 504 `render_timeout`, never
 * left hanging.
 *
 * Threads are started as cards need them (memory: a warm thread holds tens of MB):
 * `start()` starts `minThreads` (default 1) and resolves once each has drawn its warm-up cards,
 * which proves a thread can draw; a card that finds every thread busy starts one more, up to
 * `threads`; a thread above `minThreads` that has drawn nothing for `idleMs` ends.
 */
import { Worker } from 'node:worker_threads';
import { ServiceError } from '../../lib/errors.ts';
import type { Lifecycle } from '../../lib/lifecycle.ts';
import type { Registry } from '../../lib/metrics.ts';
import { sourceModule, typescriptApi } from '../../lib/modules.ts';
import type { OgCard } from './fields.ts';
import type { DrawRequest, ThreadMessage } from './worker-protocol.ts';

/** Settings of the pool; each has a default fit for a small renderer. */
export interface OgPoolOptions {
  /** Most drawing threads (TINTYPE_OG_THREADS). Default 2. */
  threads?: number;
  /** Threads kept warm even when idle, started by `start()`. Default 1 (at most `threads`). */
  minThreads?: number;
  /** A thread above `minThreads` idle this long ends. Default 60 s. */
  idleMs?: number;
  /** Cards that may wait for a thread (TINTYPE_OG_QUEUE); one more is 503 `busy`. Default 64. */
  maxQueue?: number;
  /** Longest a card may take from `draw()` to its PNG, waiting included. Default 10 s. */
  drawTimeoutMs?: number;
  /** Worker module; tests pass one that crashes or hangs on purpose. Default ./worker.ts. */
  entry?: URL;
  /** Wait before replacing a thread that died before it was ready, so a broken set-up cannot spin. */
  respawnDelayMs?: number;
  /**
   * Where `tintype_og_missing_glyphs_total{script}` is kept: characters no face could draw,
   * drawn as the empty box (spec 4.5 rule 6), by Unicode script.
   */
  registry?: Registry;
}

/** Counters for metrics and tests. */
export interface OgPoolStats {
  /** Threads running now (started, warming up or drawing). */
  threads: number;
  /** The most threads the pool may start. */
  maxThreads: number;
  ready: number;
  busy: number;
  queued: number;
  /** Threads replaced after a crash or an overrun since start. */
  replaced: number;
  /** Characters drawn as the empty box since start, by Unicode script (spec 4.5 rule 6). */
  missingGlyphs: Record<string, number>;
}

/** The pool of drawing threads. */
export interface OgPool extends Lifecycle {
  /** Draws a card to PNG bytes on a worker thread. `signal` aborts a card nobody waits for. */
  draw(card: OgCard, signal?: AbortSignal): Promise<Buffer>;
  stats(): OgPoolStats;
}

interface Job {
  id: number;
  card: OgCard;
  resolve(png: Buffer): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
  signal: AbortSignal | undefined;
  onAbort: () => void;
  /** Settles when the card has left the pool, answered or not. */
  done: Promise<unknown>;
}

interface Thread {
  worker: Worker;
  ready: boolean;
  job: Job | undefined;
  /** Set when the pool ended this thread on purpose (overrun, idle, stop). */
  ending: boolean;
  /** Ends the thread when it stays idle (threads above the minimum only). */
  idle: NodeJS.Timeout | undefined;
  /** Resolves once the thread is warm or has exited, whichever comes first. */
  settled: Promise<void>;
}

/**
 * How long stop() waits for a thread still warming up before it ends it. A thread is never
 * terminated while it loads its modules: under a TypeScript loader (a checkout's `tintype
 * start`) that has crashed the whole process in V8 (a failed internal check, SIGILL).
 */
const STOP_WARM_WAIT_MS = 10_000;

const DEFAULT_ENTRY = sourceModule('./worker.ts', import.meta.url);

/**
 * Heap limits of a drawing thread. The old generation bound makes a runaway card end its own
 * thread, not the renderer. The young generation is capped at 8 MB: a card's garbage dies young,
 * and V8's default lets a busy thread grow it to 32 MB, ~30 MB more per thread for no gain
 * measured in `npm run bench -- og`.
 */
export const DRAWING_THREAD_LIMITS = { maxOldGenerationSizeMb: 512, maxYoungGenerationSizeMb: 8 } as const;
// A worker cannot reuse the parent's TypeScript loader (tsx registers per thread on Node 20),
// so each thread registers it before importing its entry. Resolved here, from this checkout;
// compiled, there is nothing to register.
const TSX_API = typescriptApi();

function bootstrap(entry: URL): string {
  if (TSX_API === undefined) return `import(${JSON.stringify(entry.href)});`;
  return `import(${JSON.stringify(TSX_API)}).then((m) => { m.register(); return import(${JSON.stringify(entry.href)}); });`;
}

/** Creates the pool; `start()` spawns its first threads and resolves once each is warm. */
export function createOgPool(options: OgPoolOptions = {}): OgPool {
  const size = options.threads ?? 2;
  const minThreads = Math.min(size, options.minThreads ?? 1);
  const idleMs = options.idleMs ?? 60_000;
  const maxQueue = options.maxQueue ?? 64;
  const timeoutMs = options.drawTimeoutMs ?? 10_000;
  const entry = options.entry ?? DEFAULT_ENTRY;
  const respawnDelayMs = options.respawnDelayMs ?? 1_000;
  if (!Number.isInteger(size) || size < 1) throw new RangeError('threads must be a whole number of at least 1');
  if (!Number.isInteger(maxQueue) || maxQueue < 0) throw new RangeError('maxQueue must be a whole number of at least 0');
  if (!Number.isInteger(minThreads) || minThreads < 1) throw new RangeError('minThreads must be a whole number of at least 1');

  const threads = new Set<Thread>();
  const queue: Job[] = [];
  let running = false;
  let nextId = 1;
  let replaced = 0;
  // When a thread last died before it was ready: no new thread starts within respawnDelayMs of
  // it, so a broken set-up cannot spin however many cards arrive.
  let setupFailedAt = -Infinity;
  const respawns = new Set<NodeJS.Timeout>();
  const missing = new Map<string, number>();
  const missingCounter = options.registry?.counter('tintype_og_missing_glyphs_total',
    'Characters on OG cards that no face has a glyph for, drawn as the empty box, by Unicode script.');

  function settle(job: Job): void {
    clearTimeout(job.timer);
    job.signal?.removeEventListener('abort', job.onAbort);
  }

  function pump(): void {
    for (const t of threads) {
      if (!t.ready || t.job !== undefined || t.ending) continue;
      if (queue.length === 0) {
        idleSoon(t);
        continue;
      }
      clearTimeout(t.idle);
      t.idle = undefined;
      const job = queue.shift()!;
      t.job = job;
      t.worker.postMessage({ id: job.id, card: job.card } satisfies DrawRequest);
    }
  }

  function counts(): { live: number; starting: number; ready: number } {
    let live = 0;
    let starting = 0;
    for (const t of threads) {
      if (t.ending) continue;
      live++;
      if (!t.ready) starting++;
    }
    return { live, starting, ready: live - starting };
  }

  // A free thread above the minimum ends after idleMs without a card.
  function idleSoon(t: Thread): void {
    if (t.idle !== undefined || idleMs === Infinity) return;
    t.idle = setTimeout(() => {
      t.idle = undefined;
      // Counted among ready threads: a warm thread never ends in favour of one still warming up.
      if (!running || t.ending || t.job !== undefined || counts().ready <= minThreads) return;
      t.ending = true;
      void t.worker.terminate();
    }, idleMs);
    t.idle.unref();
  }

  // Keeps the minimum running, and starts one more thread when cards wait beyond what the
  // threads already warming up will take. `afterDelay`: called by the respawn timer itself.
  function ensure(afterDelay = false): void {
    if (!running || (!afterDelay && Date.now() - setupFailedAt < respawnDelayMs)) return;
    let c = counts();
    while (c.live < minThreads) {
      spawn().catch(() => undefined);
      c = counts();
    }
    if (queue.length > c.starting && c.live < size) spawn().catch(() => undefined);
  }

  function spawn(): Promise<void> {
    const worker = new Worker(bootstrap(entry), {
      eval: true,
      resourceLimits: DRAWING_THREAD_LIMITS,
      stdout: false,
      stderr: false,
    });
    const thread: Thread = { worker, ready: false, job: undefined, ending: false, idle: undefined, settled: Promise.resolve() };
    threads.add(thread);
    const warm = new Promise<void>((resolveReady, rejectReady) => {
      worker.on('message', (m: ThreadMessage) => {
        if (m.kind === 'ready') {
          thread.ready = true;
          resolveReady();
          pump();
          return;
        }
        const job = thread.job;
        if (job === undefined || job.id !== m.id) return;
        thread.job = undefined;
        settle(job);
        if (m.kind === 'drawn') {
          for (const [script, n] of Object.entries(m.missing ?? {})) {
            missing.set(script, (missing.get(script) ?? 0) + n);
            missingCounter?.inc({ script }, n);
          }
          job.resolve(Buffer.from(m.png));
        }
        else job.reject(new ServiceError('render_failed'));
        pump();
      });
      let setupError = '';
      worker.on('error', (err) => {
        // 'exit' follows and does the accounting. Only a set-up failure (a missing font file)
        // is reported: once cards arrive, an error's text may quote a card's field.
        if (!thread.ready) setupError = err instanceof Error ? `: ${err.message}` : '';
      });
      worker.on('exit', () => {
        threads.delete(thread);
        clearTimeout(thread.idle);
        const job = thread.job;
        thread.job = undefined;
        if (job !== undefined) {
          settle(job);
          job.reject(new ServiceError('render_failed'));
        }
        if (!thread.ready) rejectReady(new Error(`an OG drawing thread exited before it was ready${setupError}`));
        if (!running || thread.ending) return;
        // Spec Part 7: a crash answers its own card 502; the pool heals for the next ones.
        replaced++;
        if (!thread.ready) setupFailedAt = Date.now();
        const delay = thread.ready ? 0 : respawnDelayMs;
        const timer = setTimeout(() => {
          respawns.delete(timer);
          ensure(true);
        }, delay);
        respawns.add(timer);
      });
    });
    thread.settled = warm.catch(() => undefined);
    return warm;
  }

  function overrun(job: Job): void {
    const queued = queue.indexOf(job);
    if (queued >= 0) {
      queue.splice(queued, 1);
    } else {
      // The card is on a thread that has not answered in time: that thread is stuck, end it.
      for (const t of threads) {
        if (t.job === job) {
          t.job = undefined;
          void t.worker.terminate();
          replaced++;
          t.ending = true;
          ensure();
        }
      }
    }
    settle(job);
    job.reject(new ServiceError('render_timeout'));
  }

  return {
    async start() {
      if (running) return;
      running = true;
      try {
        await Promise.all(Array.from({ length: minThreads }, () => spawn()));
      } catch (err) {
        await this.stop();
        throw err;
      }
    },

    async stop() {
      running = false;
      for (const timer of respawns) clearTimeout(timer);
      respawns.clear();
      for (const job of queue.splice(0)) {
        settle(job);
        job.reject(new ServiceError('busy'));
      }
      // Cards already on a thread finish (each is bounded by its own time limit), then threads end.
      await Promise.all([...threads].map((t) => t.job?.done));
      await Promise.all([...threads].map((t) => Promise.race([t.settled, new Promise((r) => setTimeout(r, STOP_WARM_WAIT_MS).unref())])));
      await Promise.all([...threads].map((t) => {
        clearTimeout(t.idle);
        t.ending = true;
        return t.worker.terminate();
      }));
      threads.clear();
    },

    healthy() {
      if (!running) return false;
      for (const t of threads) if (t.ready && !t.ending) return true;
      return false;
    },

    draw(card, signal) {
      if (!running) return Promise.reject(new ServiceError('busy'));
      if (signal?.aborted) return Promise.reject(new ServiceError('render_failed'));
      const idle = [...threads].some((t) => t.ready && t.job === undefined && !t.ending);
      // Threads not started or still warming up count as places too: with all of them the pool
      // takes as many cards at once as a pool that started every thread up front.
      if (!idle && queue.length >= maxQueue + size - counts().ready) return Promise.reject(new ServiceError('busy'));
      let job!: Job;
      const answer = new Promise<Buffer>((resolve, reject) => {
        job = {
          id: nextId++,
          card,
          resolve,
          reject,
          signal,
          timer: setTimeout(() => overrun(job), timeoutMs),
          onAbort: () => {
            // The client left: a waiting card leaves the queue; a card being drawn is let finish
            // (milliseconds) and its bytes are dropped. Its time limit stays armed, so a thread
            // stuck on an abandoned card is still ended.
            const i = queue.indexOf(job);
            if (i >= 0) {
              queue.splice(i, 1);
              settle(job);
            }
            reject(new ServiceError('render_failed'));
          },
          done: Promise.resolve(),
        };
      });
      job.done = answer.then(() => undefined, () => undefined);
      signal?.addEventListener('abort', job.onAbort, { once: true });
      queue.push(job);
      pump();
      ensure();
      return answer;
    },

    stats() {
      let ready = 0;
      let busy = 0;
      for (const t of threads) {
        if (t.ready && !t.ending) ready++;
        if (t.job !== undefined) busy++;
      }
      return { threads: threads.size, maxThreads: size, ready, busy, queued: queue.length, replaced, missingGlyphs: Object.fromEntries(missing) };
    },
  };
}
