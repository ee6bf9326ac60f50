/**
 * A loopback OTLP/HTTP trace receiver for tests: accepts `POST /v1/traces` with the JSON
 * encoding @opentelemetry/exporter-trace-otlp-http sends, keeps every span, and keeps the raw
 * request bodies so a test can search them for a URL or key that must never be exported.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** One exported span, flattened from resourceSpans ▸ scopeSpans ▸ spans. */
export interface ReceivedSpan {
  service: string;
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  attributes: Record<string, unknown>;
}

export interface OtlpReceiver {
  /** Base endpoint, as OTEL_EXPORTER_OTLP_ENDPOINT takes it. */
  endpoint: string;
  spans: ReceivedSpan[];
  /** Every request body received, as text. */
  raw: string[];
  /** Resolves once a span satisfying `match` has arrived, or with undefined after `boundMs` (a hang guard, not a timing check). */
  waitFor(match: (s: ReceivedSpan) => boolean, boundMs?: number): Promise<ReceivedSpan | undefined>;
  close(): Promise<void>;
}

type AnyValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number };

function value(v: AnyValue): unknown {
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.doubleValue !== undefined) return v.doubleValue;
  return undefined;
}

function attrs(list: { key: string; value: AnyValue }[] | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const a of list ?? []) out[a.key] = value(a.value);
  return out;
}

/** Ids arrive as hex in the JSON encoding; base64 in some versions. Both are normalised to hex. */
function hex(id: string | undefined): string {
  if (id === undefined || id === '') return '';
  return /^[0-9a-f]+$/i.test(id) ? id.toLowerCase() : Buffer.from(id, 'base64').toString('hex');
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const raw: string[] = [];
  const waiters: { match: (s: ReceivedSpan) => boolean; resolve: (s: ReceivedSpan) => void }[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      raw.push(text);
      try {
        const body = JSON.parse(text) as { resourceSpans?: any[] };
        for (const rs of body.resourceSpans ?? []) {
          const service = String(attrs(rs.resource?.attributes)['service.name'] ?? '');
          for (const ss of rs.scopeSpans ?? []) {
            for (const s of ss.spans ?? []) {
              const span: ReceivedSpan = {
                service,
                name: s.name,
                traceId: hex(s.traceId),
                spanId: hex(s.spanId),
                parentSpanId: hex(s.parentSpanId),
                attributes: attrs(s.attributes),
              };
              spans.push(span);
              for (const w of [...waiters]) {
                if (w.match(span)) {
                  waiters.splice(waiters.indexOf(w), 1);
                  w.resolve(span);
                }
              }
            }
          }
        }
      } catch {
        // Not JSON: kept in `raw` only.
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    spans,
    raw,
    waitFor(match, boundMs = 30_000) {
      const found = spans.find(match);
      if (found !== undefined) return Promise.resolve(found);
      return new Promise((resolve) => {
        const w = { match, resolve: (s: ReceivedSpan) => { clearTimeout(timer); resolve(s); } };
        const timer = setTimeout(() => {
          waiters.splice(waiters.indexOf(w), 1);
          resolve(undefined);
        }, boundMs);
        waiters.push(w);
      });
    },
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
