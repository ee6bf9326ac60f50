/** Policy's Prometheus series (docs/operations.md "Telemetry"). Labels are bounded: operation, outcome, result. */
import { Registry } from '../lib/metrics.ts';

export function policyMetrics(registry: Registry = new Registry()) {
  return {
    registry,
    checks: registry.counter('tintype_policy_checks_total', 'ext_authz checks by operation and outcome'),
    checkSeconds: registry.histogram('tintype_policy_check_seconds', 'ext_authz check latency',
      [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1]),
    settles: registry.counter('tintype_policy_settles_total', 'settle requests by result and metering'),
    claims: registry.counter('tintype_policy_claims_total', 'lease claims and releases by result (claimed, held, spent, released, forged)'),
    expiries: registry.counter('tintype_policy_lease_expiries_total', 'leases expired unsettled'),
    refused: registry.counter('tintype_policy_refused_total', 'connections and calls refused before any work, by reason (connections, peer_connections, no_renderer_token)'),
    storeErrors: registry.counter('tintype_policy_store_errors_total', 'store calls that failed (answered 503 busy)'),
  };
}
export type PolicyMetrics = ReturnType<typeof policyMetrics>;
