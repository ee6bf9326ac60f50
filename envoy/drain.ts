/**
 * Envoy's drain before it stops (docs/helm.md, "Rolling restarts"), from a helper beside it in the
 * pod: Envoy's image has no shell tools, and Envoy cuts everything in flight at SIGTERM. Through
 * Envoy's admin API, on loopback in the pod:
 *   1. wait `waitMs` while the Service's endpoints and the load balancer let go of the pod (Envoy
 *      serves on meanwhile, as its container's preStop sleep keeps it from SIGTERM);
 *   2. POST /drain_listeners?graceful: for the drain time (`--drain-time-s`) Envoy discourages
 *      requests (with `--drain-strategy immediate`, every HTTP/1 answer carries `connection: close`
 *      and HTTP/2 gets GOAWAY at once, so keep-alive clients move to another pod) while it still
 *      accepts connections; then it closes its listeners;
 *   3. poll the public listener's requests in flight (`http.public.downstream_rq_active`) until
 *      none is left or the drain time is over, so a render already running finishes.
 * Envoy's container is signalled only after its preStop sleep, which the chart sets to the wait
 * plus the drain time: by then nothing is left in flight.
 */
import type { Logger } from '../lib/log.ts';

/** Envoy's admin API is on loopback only (files/envoy.yaml, `admin`). */
export const ENVOY_ADMIN_URL = 'http://127.0.0.1:9901';
/** The public listener's requests in flight, as Envoy names the stat (stat_prefix `public`). */
export const ACTIVE_REQUESTS_STAT = 'http.public.downstream_rq_active';

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
  /** Requests still in flight when the helper stopped waiting (0: all answered). */
  leftInFlight: number | undefined;
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

export async function drainEnvoy(o: EnvoyDrainOptions): Promise<EnvoyDrainResult> {
  const admin = o.adminUrl ?? ENVOY_ADMIN_URL;
  const sleep = o.sleep ?? pause;
  const now = o.now ?? Date.now;
  await sleep(o.waitMs);
  const started = now();
  const drained = await fetch(`${admin}/drain_listeners?graceful`, { method: 'POST' }).catch((err: unknown) => err as Error);
  if (drained instanceof Error || !drained.ok) {
    // Envoy gone already, or refusing: nothing more to wait for here.
    o.logger.warn('envoy.drain_failed', { message: drained instanceof Error ? drained.message : `status ${drained.status}` });
    return { leftInFlight: undefined };
  }
  o.logger.info('envoy.draining', { drain_ms: o.drainMs });
  let active: number | undefined;
  for (;;) {
    const r = await fetch(`${admin}/stats?filter=${encodeURIComponent(`^${ACTIVE_REQUESTS_STAT.replaceAll('.', '\\.')}$`)}`).catch(() => undefined);
    // Envoy exits by itself at the end of a graceful drain: no admin API means nothing in flight.
    if (r === undefined) return { leftInFlight: 0 };
    active = statValue(await r.text(), ACTIVE_REQUESTS_STAT);
    if (active === 0 || now() - started >= o.drainMs) break;
    await sleep(o.pollMs ?? 500);
  }
  o.logger.info('envoy.drained', { left_in_flight: active ?? null });
  return { leftInFlight: active };
}
