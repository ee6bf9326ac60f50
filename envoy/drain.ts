/**
 * Envoy's drain before it stops (docs/helm.md, "Rolling restarts"), from a helper beside it in the
 * pod: Envoy's image has no shell tools, and Envoy cuts everything in flight at SIGTERM. Through
 * Envoy's admin API, on loopback in the pod:
 *   1. POST /healthcheck/fail: readiness first. Envoy's `/ready` (the pod's readiness probe) answers
 *      503 from now on, and a listener of the default drain type answers every request with
 *      `connection: close` (HTTP/2: GOAWAY), so keep-alive clients move to another pod at once;
 *   2. wait `waitMs` while the Service's endpoints and the load balancer let go of the pod (Envoy
 *      still accepts and serves new connections meanwhile);
 *   3. POST /drain_listeners?graceful: for the drain time (`--drain-time-s`) Envoy discourages
 *      requests (`--drain-strategy immediate`) while it still accepts connections; then it closes
 *      its listeners;
 *   4. poll the public listener's requests in flight (`http.public.downstream_rq_active`) and open
 *      connections (`http.public.downstream_cx_active`) until none is left or the drain time is
 *      over, so a render already running finishes.
 * Envoy's preStop (envoy/drained-hook.ts) ends when this does, and only then is Envoy signalled.
 */
import type { Logger } from '../lib/log.ts';

/** Envoy's admin API is on loopback only (files/envoy.yaml, `admin`). */
export const ENVOY_ADMIN_URL = 'http://127.0.0.1:9901';
/** The public listener's requests in flight and open connections, as Envoy names them (stat_prefix `public`). */
export const ACTIVE_REQUESTS_STAT = 'http.public.downstream_rq_active';
export const OPEN_CONNECTIONS_STAT = 'http.public.downstream_cx_active';

export interface EnvoyDrainOptions {
  adminUrl?: string;
  /** Before the drain: the time the endpoints take to let go of the pod. */
  waitMs: number;
  /** Envoy's --drain-time-s, in ms: the longest the drain may take. */
  drainMs: number;
  pollMs?: number;
  logger: Logger;
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
}

export interface EnvoyDrainResult {
  /** Requests in flight and connections open when the helper stopped waiting (0: all done). */
  leftInFlight: number | undefined;
  leftOpen: number | undefined;
}

const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Envoy's `/stats?filter=` answer in its text form: one `name: value` a line. */
export function statValue(text: string, name: string): number | undefined {
  for (const line of text.split('\n')) {
    const [k, v] = line.split(': ');
    if (k === name && v !== undefined && /^\d+$/.test(v.trim())) return Number(v.trim());
  }
  return undefined;
}

async function post(url: string): Promise<string | undefined> {
  const r = await fetch(url, { method: 'POST' }).catch((err: unknown) => err as Error);
  if (r instanceof Error) return r.message;
  await r.body?.cancel();
  return r.ok ? undefined : `status ${r.status}`;
}

const STATS_FILTER = `^http\\.public\\.downstream_(rq|cx)_active$`;

export async function drainEnvoy(o: EnvoyDrainOptions): Promise<EnvoyDrainResult> {
  const admin = o.adminUrl ?? ENVOY_ADMIN_URL;
  const sleep = o.sleep ?? pause;
  const now = o.now ?? Date.now;
  const unready = await post(`${admin}/healthcheck/fail`);
  // Not fatal: the endpoints still let go of a deleted pod, only later.
  if (unready !== undefined) o.logger.warn('envoy.unready_failed', { message: unready });
  else o.logger.info('envoy.unready', { wait_ms: o.waitMs });
  await sleep(o.waitMs);
  const started = now();
  const drained = await post(`${admin}/drain_listeners?graceful`);
  if (drained !== undefined) {
    // Envoy gone already, or refusing: nothing more to wait for here.
    o.logger.warn('envoy.drain_failed', { message: drained });
    return { leftInFlight: undefined, leftOpen: undefined };
  }
  o.logger.info('envoy.draining', { drain_ms: o.drainMs });
  let active: number | undefined;
  let open: number | undefined;
  for (;;) {
    const r = await fetch(`${admin}/stats?filter=${encodeURIComponent(STATS_FILTER)}`).catch(() => undefined);
    // Envoy exits by itself at the end of a graceful drain: no admin API means nothing in flight.
    if (r === undefined) return { leftInFlight: 0, leftOpen: 0 };
    const text = await r.text();
    active = statValue(text, ACTIVE_REQUESTS_STAT);
    open = statValue(text, OPEN_CONNECTIONS_STAT);
    if ((active === 0 && (open ?? 0) === 0) || now() - started >= o.drainMs) break;
    await sleep(o.pollMs ?? 250);
  }
  o.logger.info('envoy.drained', { left_in_flight: active ?? null, left_open: open ?? null });
  return { leftInFlight: active, leftOpen: open };
}
