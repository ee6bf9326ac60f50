/**
 * OpenTelemetry set-up (docs/operations.md "Telemetry"): the NodeSDK with an OTLP/HTTP trace exporter when an
 * endpoint is configured, off otherwise. W3C `traceparent` is the only propagation, so a trace
 * runs edge ▸ policy ▸ renderer ▸ browser. Spans are made with `trace.getTracer('tintype')` in
 * each role; their attributes never carry a URL, HTML or key. Traces only: metrics are
 * Prometheus on the admin port and logs are JSON lines, so the SDK's env-driven metric and log
 * exporters are switched off here, as are resource detectors that would copy the command line.
 * The SDK is loaded only when tracing is on: it is most of a role's start-up time otherwise.
 */
import { readFileSync } from 'node:fs';
import { context, propagation } from '@opentelemetry/api';
import type { Config } from './config.ts';

export interface Telemetry {
  /** Whether spans are being exported. */
  readonly enabled: boolean;
  /** Flushes spans in flight and stops the exporter. */
  shutdown(): Promise<void>;
}

/** The OTLP/HTTP traces URL for an endpoint: `OTEL_EXPORTER_OTLP_ENDPOINT` is a base, `…/v1/traces` is used as is. */
export function tracesUrl(endpoint: string): string {
  return /\/v1\/traces\/?$/.test(endpoint) ? endpoint : endpoint.replace(/\/+$/, '') + '/v1/traces';
}

/**
 * Starts tracing for `role` (service name `tintype-<role>` unless OTEL_SERVICE_NAME says
 * otherwise); a no-op when no endpoint is configured.
 */
export async function startTelemetry(
  config: Pick<Config, 'otelEndpoint' | 'otelServiceName'> & Partial<Pick<Config, 'otelHeaders' | 'otelCaFile'>>,
  role: string,
  options: { exportDelayMs?: number } = {},
): Promise<Telemetry> {
  if (config.otelEndpoint === undefined) return { enabled: false, shutdown: async () => {} };
  const [{ OTLPTraceExporter }, { NodeSDK, core, resources, tracing }] = await Promise.all([
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/sdk-node'),
  ]);
  const serviceName = config.otelServiceName ?? `tintype-${role}`;
  const exporter = new OTLPTraceExporter({
    url: tracesUrl(config.otelEndpoint),
    headers: { ...config.otelHeaders },
    // A private collector's CA: its certificate is checked against this CA alone.
    ...(config.otelCaFile === undefined ? {} : { httpAgentOptions: { ca: readCa(config.otelCaFile) } }),
  });
  const sdk = new NodeSDK({
    serviceName,
    resource: resources.resourceFromAttributes({ 'service.name': serviceName }),
    autoDetectResources: false,
    spanProcessors: [new tracing.BatchSpanProcessor(exporter, { scheduledDelayMillis: options.exportDelayMs ?? 1_000 })],
    textMapPropagator: new core.W3CTraceContextPropagator(),
    instrumentations: [],
    metricReaders: [],
    logRecordProcessors: [],
  });
  sdk.start();
  return { enabled: true, shutdown: () => sdk.shutdown() };
}

/** The collector's CA (OTEL_EXPORTER_OTLP_CERTIFICATE): a clear error when it cannot be read or holds no certificate. */
function readCa(file: string): string {
  let pem: string;
  try {
    pem = readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`OTEL_EXPORTER_OTLP_CERTIFICATE: cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  if (!pem.includes('-----BEGIN CERTIFICATE-----')) throw new Error(`OTEL_EXPORTER_OTLP_CERTIFICATE: ${file} holds no PEM certificate`);
  return pem;
}

/**
 * A fetch that sends the active trace context (`traceparent`) with each request, so a call
 * made inside a span (a renderer's settle, for one) joins that span's trace.
 */
export function propagatingFetch(base: typeof fetch = fetch): typeof fetch {
  return (input, init) => {
    const carrier: Record<string, string> = {};
    propagation.inject(context.active(), carrier);
    if (Object.keys(carrier).length === 0) return base(input, init);
    const headers = new Headers(init?.headers);
    for (const [k, v] of Object.entries(carrier)) headers.set(k, v);
    return base(input, { ...init, headers });
  };
}
