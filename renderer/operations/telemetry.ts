/**
 * Spans of docs/operations.md "Telemetry" (`render` and its children). Attributes carry operation, sizes,
 * outcome, codes and counts, never a URL, HTML or key. A no-op until bin/ starts the SDK.
 */
import { SpanStatusCode, trace, type Attributes, type Span } from '@opentelemetry/api';
import { ServiceError } from '../../lib/errors.ts';

const tracer = trace.getTracer('tintype');

export type SpanName = 'render' | 'cache.lookup' | 'cache.flight' | 'slot.wait' | 'browser.context' | 'navigate' | 'capture' | 'encode' | 'cache.store' | 'og.draw';

/** Runs `fn` inside a child span of the active one; errors mark the span with their code only. */
export async function inSpan<T>(name: SpanName, attributes: Attributes, fn: (span: Span) => Promise<T>): Promise<T> {
  return tracer.startActiveSpan(name, { attributes }, async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      const code = err instanceof ServiceError ? err.code : 'internal';
      span.setAttribute('error.code', code);
      span.setStatus({ code: SpanStatusCode.ERROR, message: code });
      throw err;
    } finally {
      span.end();
    }
  });
}

/** Starts a span that is ended by hand (slot.wait ends when the render's work begins). */
export function startSpan(name: SpanName, attributes: Attributes): Span {
  return tracer.startSpan(name, { attributes });
}
