/**
 * The renderer's Prometheus series (docs/operations.md "Telemetry"): renders by operation and outcome, latency,
 * slots busy/total, cache hits and misses. Labels come from bounded sets only.
 */
import type { Counter, Gauge, Histogram, Registry } from '../../lib/metrics.ts';

export interface RendererMetrics {
  renders: Counter;
  latency: Histogram;
  slotsBusy: Gauge;
  slotsTotal: Gauge;
  cache: Counter;
  blocked: Counter;
}

export function rendererMetrics(registry: Registry): RendererMetrics {
  return {
    renders: registry.counter('tintype_renders_total', 'Answers of render operations by operation and outcome (ok or error code).'),
    latency: registry.histogram('tintype_render_duration_seconds', 'Time to answer a render operation, by operation.'),
    // The same series the pool registers when given the registry; either fills them.
    slotsBusy: registry.gauge('tintype_render_slots_busy', 'Render slots in use.'),
    slotsTotal: registry.gauge('tintype_render_slots', 'Render slots of this renderer.'),
    cache: registry.counter('tintype_cache_lookups_total', 'Render cache lookups by operation and result (hit or miss).'),
    blocked: registry.counter('tintype_render_blocked_total', 'Sub-resource connections the guard refused, by operation.'),
  };
}
