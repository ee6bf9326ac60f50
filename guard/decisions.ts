/**
 * One canonical line per request or tunnel (docs/architecture.md §7 rule 6): what kind of request, whether
 * it was refused and why, whether it named a render, the status answered and how long it took.
 * Never the URL, host, address or render token. The same decision feeds the metrics, whose
 * labels are bounded vocabularies (docs/operations.md "Telemetry").
 */
import { REJECT_REASONS, type RejectReason } from '../lib/errors.ts';
import type { Logger } from '../lib/log.ts';
import type { Counter, Gauge, Registry } from '../lib/metrics.ts';

/** How the request reached the guard. `malformed`: Node's HTTP parser refused it. */
export type RequestKind = 'http' | 'connect' | 'upgrade' | 'malformed';

/** The outcome of one request or tunnel. */
export type Outcome =
  | { decision: 'refused'; reason: RejectReason }
  /** Passed the rules; `status` is what the client got (502/504 when the target failed). */
  | { decision: 'allowed'; status: number; failure?: string }
  /** Not a judgement: over the tunnel bound, a bad request, a tally fetch. */
  | { decision: 'other'; status: number; note: string };

export interface DecisionRecorder {
  record(kind: RequestKind, named: boolean, outcome: Outcome, startedAt: number): void;
}

export function createRecorder(logger: Logger, registry: Registry | undefined, openTunnels: () => number): DecisionRecorder {
  const decisions: Counter | undefined = registry?.counter(
    'tintype_guard_decisions_total',
    'Requests and tunnels the guard judged, by kind and decision.',
  );
  const refusals: Counter | undefined = registry?.counter(
    'tintype_guard_refusals_total',
    'Requests and tunnels the guard refused, by reason.',
  );
  // Every reason is exposed from the start, so a rate over it is defined before the first refusal.
  for (const reason of REJECT_REASONS) refusals?.inc({ reason }, 0);
  const tunnels: Gauge | undefined = registry?.gauge('tintype_guard_tunnels_open', 'Tunnels open through the guard.');
  tunnels?.collect(() => tunnels.set(openTunnels()));
  return {
    record(kind, named, outcome, startedAt) {
      const ms = Math.round((performance.now() - startedAt) * 100) / 100;
      const render = named ? 'named' : 'unnamed';
      if (outcome.decision === 'refused') {
        refusals?.inc({ reason: outcome.reason });
        decisions?.inc({ kind, decision: 'refused' });
        logger.info('guard.decision', { kind, decision: 'refused', reason: outcome.reason, render, status: 403, ms });
      } else if (outcome.decision === 'allowed') {
        decisions?.inc({ kind, decision: 'allowed' });
        logger.info('guard.decision', { kind, decision: 'allowed', render, status: outcome.status, failure: outcome.failure, ms });
      } else {
        decisions?.inc({ kind, decision: 'other' });
        logger.info('guard.decision', { kind, decision: 'other', note: outcome.note, render, status: outcome.status, ms });
      }
    },
  };
}
