/**
 * What the chart's rolling-restart runs share (rollout.test.ts, one machine; wiring.test.ts, pods
 * in network namespaces): a caller's answers, steady traffic made of them, the kubelet's stop of a
 * deleted pod as the rendered Deployment says it, and what a run may answer: 200, or the one
 * retryable refusal, 503 `busy` with `retry-after` (docs/api.md "What each error means for a
 * caller").
 */
import http from 'node:http';

/** An answer, the pod that gave it, and when it came (ms). Status 0: no answer (the error in `body`). */
export interface Answer { status: number; headers: http.IncomingHttpHeaders; body: string; host?: string; at?: number }

/** One HTTP call; never rejects. A 200's body is left out (`bytes` counts it), others' kept. */
export function call(o: {
  host: string; port: number; method: string; path: string; headers?: Record<string, string>; body?: string;
  agent?: http.Agent | false; localAddress?: string; timeoutMs?: number;
}): Promise<Answer & { bytes: Buffer }> {
  return new Promise((resolve) => {
    const failed = (err: Error): void => resolve({ status: 0, headers: {}, body: err.message, bytes: Buffer.alloc(0), at: Date.now() });
    const headers = { ...o.headers, ...(o.body === undefined ? {} : { 'content-length': String(Buffer.byteLength(o.body)) }) };
    const req = http.request({
      host: o.host, port: o.port, method: o.method, path: o.path, headers, agent: o.agent ?? false, timeout: o.timeoutMs ?? 300_000,
      ...(o.localAddress === undefined ? {} : { localAddress: o.localAddress }),
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const bytes = Buffer.concat(chunks);
        resolve({ status: res.statusCode!, headers: res.headers, body: res.statusCode === 200 ? '' : bytes.toString('utf8'), bytes, at: Date.now() });
      });
      res.on('error', failed);
    });
    req.once('timeout', () => req.destroy(new Error('timeout')));
    req.once('error', failed);
    req.end(o.body);
  });
}

/** Calls made one after another by each of `callers`, each starting at most once a `periodMs`, until stopped. */
export interface Steady {
  answers: Answer[];
  /** Resolves once `n` more answers than now have come. */
  more(n: number): Promise<void>;
  /** Stops calling; resolves once every call made has its answer. */
  stop(): Promise<void>;
}

/**
 * Steady traffic. A caller's calls start `periodMs` apart, or when the last one answered if it
 * took longer: however fast the answers come (a pod that is gone answers at once), the rate never
 * passes `callers` a period.
 */
export function steady(one: () => Promise<Answer>, periodMs: number, callers = 1): Steady {
  const answers: Answer[] = [];
  let running = true;
  const loops = Promise.all(Array.from({ length: callers }, async () => {
    while (running) {
      const started = Date.now();
      answers.push(await one());
      await new Promise((r) => setTimeout(r, Math.max(0, started + periodMs - Date.now())));
    }
  }));
  return {
    answers,
    async more(n) {
      const want = answers.length + n;
      while (answers.length < want) await new Promise((r) => setTimeout(r, 50));
    },
    async stop() {
      running = false;
      await loops;
    },
  };
}

/**
 * The period that keeps `callers` steady callers on one key at 80% of its plan's per-minute limit
 * (spec Part 8 "Per-key burst limit"): a run that lasts longer than a window is never refused 429.
 */
export function periodUnder(perMinute: number, callers = 1): number {
  return Math.ceil((60_000 * callers) / (perMinute * 0.8));
}

/** Whether an answer is the spec's retryable refusal: 503 `busy` with `retry-after`. */
export function isBusy(a: Answer): boolean {
  return a.status === 503 && a.headers['retry-after'] !== undefined && /"error":\s*"busy"/.test(a.body);
}

/** A container of a deleted pod, as the kubelet stops it. */
export interface Container {
  /** Its rendered preStop `httpGet`, sent from the node (the kubelet); none: SIGTERM at once. */
  preStop?: () => Promise<number>;
  /** Sends SIGTERM to the container's first process. */
  term(): void;
  /** Sends SIGKILL (the grace period is over). */
  kill(): void;
  exited: Promise<unknown>;
}

export interface Stopped {
  /** Each container's preStop status (undefined: it has none, or the grace period ended first). */
  preStop: Array<number | undefined>;
  /** When the pod was deleted and when each container got SIGTERM (ms). */
  deletedAt: number;
  sigtermAt: number[];
  /** How long each container took from SIGTERM to its exit (ms). */
  stoppedMs: number[];
  /** Whether every container exited before the grace period ended (else it was killed). */
  exitedWithinGrace: boolean;
}

/**
 * The kubelet's stop of a deleted pod: the grace period (`terminationGracePeriodSeconds`) starts at
 * deletion; each container, at once and side by side, runs its preStop, then gets SIGTERM; any
 * still running when the grace period ends gets SIGKILL.
 */
export async function kubeletStop(containers: readonly Container[], graceS: number): Promise<Stopped> {
  const deletedAt = Date.now();
  let timer: NodeJS.Timeout | undefined;
  const graceOver = new Promise<'over'>((r) => { timer = setTimeout(() => r('over'), graceS * 1000); });
  const sigtermAt: number[] = [];
  const stoppedMs: number[] = [];
  const preStop: Array<number | undefined> = containers.map(() => undefined);
  const ends = containers.map(async (c, i) => {
    if (c.preStop !== undefined) {
      const s = await Promise.race([c.preStop().catch(() => 0), graceOver]);
      preStop[i] = s === 'over' ? undefined : s;
    }
    sigtermAt[i] = Date.now();
    c.term();
    const ended = await Promise.race([c.exited.then(() => 'exited' as const), graceOver]);
    if (ended === 'over') c.kill();
    await c.exited;
    stoppedMs[i] = Date.now() - sigtermAt[i]!;
    return ended === 'exited';
  });
  const exited = await Promise.all(ends);
  clearTimeout(timer);
  return { preStop, deletedAt, sigtermAt, stoppedMs, exitedWithinGrace: exited.every(Boolean) };
}
