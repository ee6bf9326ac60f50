/**
 * Sustained load: many clients for a while, a mix of renders, hits, cards and pings over ten
 * keys on three plans. Afterwards no slot and no lease is held, and nothing but 503 `busy` or
 * `guard_unverified` was a 5xx.
 */
import { cleanup } from '../service.ts';
import { LOAD_ENV, loadKeys, startLoadService, within } from './fleet.ts';
import { runLoad } from './load.ts';
import { metric, openLeases, rssMb, unsettledLeases } from './readings.ts';

export interface SustainedFigures {
  requests: number;
  answers_by_status: Record<string, number>;
  unexpected_5xx: number;
  rss_mb_start: number;
  rss_mb_end: number;
  leaked_slots: number;
  leaked_leases: number;
  /**
   * ext_authz checks the edge gave up on (policy did not answer within the timeout, as on an
   * overloaded machine), each answered 503 `busy`.
   */
  authz_errors: number;
  /**
   * Leases that expired unsettled although every request was answered. Policy withdraws a grant
   * whose requester has gone, and the edge reads a grant that arrived by its timeout, so the only
   * ones left are grants handed to the connection in the very instant the edge gave up on them:
   * at most `authz_errors`, none when no check was given up.
   */
  unsettled_leases: number;
}

export async function sustainedLoad(o: { clients: number; durationMs: number; seed: number }): Promise<SustainedFigures> {
  const svc = await startLoadService();
  try {
    const keys = await loadKeys(svc, 10);
    const rssStart = rssMb(svc.pid);
    const result = await runLoad({ port: svc.port, keys, clients: o.clients, durationMs: o.durationMs, seed: o.seed }).done;
    // Every answer was received; settles may still be on their way, and nothing may stay held
    // longer than a lease can live (render budget + grace) and the sweep that ends it (a second).
    const settleWithin = Number(LOAD_ENV.TINTYPE_RENDER_TIMEOUT_MS) + Number(LOAD_ENV.TINTYPE_LEASE_GRACE_MS) + 2_000;
    const store = { dataDir: svc.dataDir };
    await within(settleWithin, async () => (await metric(svc.adminPort, 'tintype_render_slots_busy')) === 0 && (await openLeases(store)) === 0);
    return {
      requests: result.requests,
      answers_by_status: result.answersByStatus,
      unexpected_5xx: result.unexpected5xx,
      rss_mb_start: rssStart,
      rss_mb_end: rssMb(svc.pid),
      leaked_slots: await metric(svc.adminPort, 'tintype_render_slots_busy'),
      leaked_leases: await openLeases(store),
      authz_errors: await metric(svc.adminPort, 'tintype_edge_authz_errors_total'),
      unsettled_leases: await unsettledLeases(store),
    };
  } finally {
    await svc.signal('SIGTERM');
    cleanup();
  }
}
