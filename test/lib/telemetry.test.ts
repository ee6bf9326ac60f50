/**
 * lib/telemetry.ts: off without an endpoint; with one, spans go to a real OTLP/HTTP receiver on
 * loopback, and the edge's trace context reaches policy (whose `authz` span is its child) and the
 * renderer. The exported spans never carry the key or the path's query the client sent.
 */
import t from 'tap';
import { trace } from '@opentelemetry/api';
import { propagatingFetch, startTelemetry, tracesUrl } from '../../lib/telemetry.ts';
import { createEdge } from '../../envoy/edge/edge.ts';
import { policyStub, rendererStub } from '../envoy/stubs.ts';
import { send } from '../envoy/client.ts';
import { startOtlpReceiver } from '../e2e/otlp-receiver.ts';
import { SETTLE_PATH } from '../../lib/policy-contract.ts';

const quiet = { debug() {}, info() {}, warn() {}, error() {}, child() { return quiet; } };

t.test('tracesUrl: a base gets /v1/traces, a traces URL is kept', async (t) => {
  const rows = [
    { name: 'base', in: 'http://127.0.0.1:4318', out: 'http://127.0.0.1:4318/v1/traces' },
    { name: 'base with slash', in: 'http://127.0.0.1:4318/', out: 'http://127.0.0.1:4318/v1/traces' },
    { name: 'base with path', in: 'http://c:4318/otel', out: 'http://c:4318/otel/v1/traces' },
    { name: 'traces URL', in: 'http://c:4318/v1/traces', out: 'http://c:4318/v1/traces' },
  ];
  for (const r of rows) t.equal(tracesUrl(r.in), r.out, r.name);
});

t.test('off when no endpoint is configured', async (t) => {
  const tel = await startTelemetry({ otelEndpoint: undefined, otelServiceName: undefined }, 'test');
  t.equal(tel.enabled, false);
  const span = trace.getTracer('tintype').startSpan('x');
  t.equal(span.isRecording(), false, 'spans are no-ops');
  span.end();
  await tel.shutdown();
});

t.test('on with an endpoint: edge ▸ policy ▸ renderer in one trace, exported over OTLP/HTTP', async (t) => {
  const receiver = await startOtlpReceiver();
  const tel = await startTelemetry({ otelEndpoint: receiver.endpoint, otelServiceName: undefined }, 'test', { exportDelayMs: 50 });
  t.equal(tel.enabled, true);
  const policy = await policyStub();
  const renderer = await rendererStub();
  const edge = createEdge({ policyUrl: policy.url, rendererUrls: [renderer.url], host: '127.0.0.1', port: 0, openapi: Buffer.from('{}'), logger: quiet });
  await edge.start();
  t.teardown(async () => {
    await edge.stop();
    await policy.close();
    await renderer.close();
    await receiver.close();
  });

  const clientTrace = '0af7651916cd43dd8448eb211c80319c';
  const secret = 'sk_good_secretvalue0123456789';
  const a = await send({ port: edge.port(), path: '/v1/ping?probe=marker-in-query', headers: {
    authorization: `Bearer ${secret}`, traceparent: `00-${clientTrace}-b7ad6b7169203331-01`,
  } });
  t.equal(a.status, 200);

  const edgeSpan = (await receiver.waitFor((s) => s.name === 'edge'))!;
  t.ok(edgeSpan, 'the edge span arrived');
  t.equal(edgeSpan.service, 'tintype-test', 'service name from the role');
  t.equal(edgeSpan.traceId, clientTrace, 'the client traceparent is honoured');
  t.equal(edgeSpan.parentSpanId, 'b7ad6b7169203331');
  t.equal(edgeSpan.attributes['tintype.operation'], 'ping');
  t.equal(edgeSpan.attributes['http.response.status_code'], 200);

  const toPolicy = String(policy.seen[0]!.headers['traceparent']);
  const toRenderer = String(renderer.seen[0]!.headers['traceparent']);
  t.equal(toPolicy.split('-')[1], clientTrace, 'policy gets the same trace');
  t.equal(toPolicy.split('-')[2], edgeSpan.spanId, "policy's authz span will be the edge span's child");
  t.equal(toRenderer.split('-')[2], edgeSpan.spanId, "the renderer's spans will be the edge span's children");
  t.equal(receiver.spans.filter((s) => s.name === 'authz').length, 0, 'the edge makes no authz span of its own: policy does');

  // A span made inside a propagatingFetch call's context carries the trace onward.
  const seenBy = await new Promise<string | null>((resolve, reject) => {
    trace.getTracer('tintype').startActiveSpan('settle-caller', async (span) => {
      try {
        const res = await propagatingFetch()(policy.url + SETTLE_PATH, { method: 'POST', body: '{}' });
        await res.arrayBuffer();
        resolve(String(policy.seen.at(-1)!.headers['traceparent']));
      } catch (err) {
        reject(err as Error);
      } finally {
        span.end();
      }
    });
  });
  const caller = (await receiver.waitFor((s) => s.name === 'settle-caller'))!;
  t.equal(seenBy?.split('-')[2], caller.spanId, 'propagatingFetch sends the active span as parent');

  await tel.shutdown();
  const everything = receiver.raw.join('\n');
  t.notMatch(everything, secret.slice(3), 'the key is never exported');
  t.notMatch(everything, 'marker-in-query', 'the query is never exported');
});
