/** The controller's Prometheus metrics; every label comes from a bounded vocabulary. */
import type { Counter, Gauge, Registry } from '../lib/metrics.ts';

export interface ControllerMetrics {
  decisions: Counter;
  scales: Counter;
  stateReads: Counter;
  watchErrors: Counter;
  writeErrors: Counter;
  leader: Gauge;
}

export function controllerMetrics(registry: Registry): ControllerMetrics {
  return {
    decisions: registry.counter('tintype_controller_decisions_total', 'Scale decisions by reason.'),
    scales: registry.counter('tintype_controller_scales_total', 'Scale writes by direction.'),
    stateReads: registry.counter('tintype_controller_state_reads_total', 'Reads of renderer /state by outcome (ok, unreadable).'),
    watchErrors: registry.counter('tintype_controller_watch_errors_total', 'List and watch failures by resource and kind (list, watch, gone).'),
    writeErrors: registry.counter('tintype_controller_write_errors_total', 'Reconciles whose writes failed.'),
    leader: registry.gauge('tintype_controller_leader', '1 while this replica holds the Lease and may write.'),
  };
}
