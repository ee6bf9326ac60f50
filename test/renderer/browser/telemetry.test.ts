/**
 * The pool's span (docs/operations.md "Telemetry"): `browser.context`, a child of the render's active span, from
 * asking for the render's fresh context (a prepared one, or one made on the spot) until that
 * context is closed; it says which (`tintype.prepared`) and carries no URL, HTML or key.
 * Spans are read from the SDK's in-memory exporter (re-exported by @opentelemetry/sdk-node).
 */
import { context, trace } from '@opentelemetry/api';
import { node, tracing } from '@opentelemetry/sdk-node';
import type { Page } from 'puppeteer-core';
import puppeteer from 'puppeteer-core';
import t from 'tap';
import { html, inProcess, startGuard, startPool, startSite, until } from './helpers.ts';

const MARKER = 'span-marker-5f3a';

const exporter = new tracing.InMemorySpanExporter();
const provider = new node.NodeTracerProvider({ spanProcessors: [new tracing.SimpleSpanProcessor(exporter)] });
provider.register();
t.teardown(async () => {
  await provider.shutdown();
  trace.disable();
  context.disable();
});

const tracer = trace.getTracer('tintype-test');

/** The finished browser.context spans whose parent is `parentSpanId`. */
function contextSpans(parentSpanId: string): tracing.ReadableSpan[] {
  return exporter.getFinishedSpans().filter((s) => s.name === 'browser.context' && s.parentSpanContext?.spanId === parentSpanId);
}

/** Gates the creation of browser contexts, so a test decides when prepared ones exist. */
function gatedLaunch() {
  let open = true;
  let waiting: Array<() => void> = [];
  return {
    hold: () => void (open = false),
    release: () => {
      open = true;
      for (const go of waiting.splice(0)) go();
    },
    launch: async (options: Parameters<typeof puppeteer.launch>[0]) => {
      const browser = await puppeteer.launch(options);
      const create = browser.createBrowserContext.bind(browser);
      browser.createBrowserContext = async (o) => {
        if (!open) await new Promise<void>((r) => waiting.push(r));
        return create(o);
      };
      return browser;
    },
  };
}

/** Runs a render inside a `render` span the test made active; returns that span's id. */
async function renderUnder(run: () => Promise<unknown>): Promise<{ spanId: string; traceId: string }> {
  return tracer.startActiveSpan('render', async (span) => {
    try {
      await run();
      return { spanId: span.spanContext().spanId, traceId: span.spanContext().traceId };
    } finally {
      span.end();
    }
  });
}

t.test('browser.context: under render, open during the work, ended once the context is closed', async (t) => {
  const g = await startGuard(t);
  const site = await startSite(t, { [`/${MARKER}`]: html(`<!doctype html><body>${MARKER}</body>`) });
  const gate = gatedLaunch();
  t.teardown(gate.release);
  const pool = await startPool(t, inProcess(g), { launch: gate.launch });
  // Two lanes for the one slot: wait until both are prepared, then stop new ones being made.
  await until(() => pool.stats().readyContexts === 2);
  gate.hold();

  let page: Page | undefined;
  let openDuringWork = -1;
  const first = await renderUnder(() =>
    pool.render({
      deadline: Date.now() + 15_000,
      run: async (ctx) => {
        page = await ctx.page();
        await page.goto(`${site.origin}/${MARKER}`, { waitUntil: 'load' });
        await page.setContent(`<p>${MARKER}</p>`);
        openDuringWork = contextSpans(trace.getActiveSpan()!.spanContext().spanId).length;
        return undefined;
      },
    }),
  );
  t.equal(openDuringWork, 0, 'the span is still open while the render works in its context');
  await until(() => contextSpans(first.spanId).length === 1);
  const [span] = contextSpans(first.spanId);
  t.equal(span!.spanContext().traceId, first.traceId, "in the render's trace");
  t.equal(span!.attributes['tintype.prepared'], true, 'the context was a prepared one');
  t.equal(span!.attributes['tintype.context_closed'], true, 'closed after the render');
  t.ok(page!.isClosed(), "the render's page is closed when the span has ended");
  // Navigate/capture spans of the operations must stay children of render: this one is not active.
  let activeInWork: string | undefined;
  const second = await renderUnder(() =>
    pool.render({
      deadline: Date.now() + 15_000,
      run: async () => {
        activeInWork = trace.getActiveSpan()?.spanContext().spanId;
        return undefined;
      },
    }),
  );
  t.equal(activeInWork, second.spanId, 'inside the work the active span is still render');

  // Both prepared lanes are used and no new one may be made: the next context is made on the spot.
  t.equal(pool.stats().readyContexts, 0, 'no prepared context left');
  const third = renderUnder(() => pool.render({ deadline: Date.now() + 15_000, run: async () => undefined }));
  gate.release();
  const { spanId } = await third;
  await until(() => contextSpans(spanId).length === 1);
  t.equal(contextSpans(spanId)[0]!.attributes['tintype.prepared'], false, 'prepared: false when it had to be made');

  const attributeKeys = new Set(exporter.getFinishedSpans().filter((s) => s.name === 'browser.context').flatMap((s) => Object.keys(s.attributes)));
  t.same([...attributeKeys].sort(), ['tintype.browser.generation', 'tintype.context_closed', 'tintype.prepared'], 'only these attributes');
  const exported = JSON.stringify(exporter.getFinishedSpans().map((s) => ({ name: s.name, attributes: s.attributes, events: s.events, status: s.status })));
  t.notMatch(exported, MARKER, 'no URL or HTML in any span');
  t.notOk(exported.includes(site.origin), 'no target address in any span');
});

t.test('a render that never gets a context: the span ends marked with the code', async (t) => {
  const g = await startGuard(t);
  const gate = gatedLaunch();
  t.teardown(gate.release);
  const pool = await startPool(t, inProcess(g), { launch: gate.launch });
  await until(() => pool.stats().readyContexts === 2);
  gate.hold();
  // Use up both prepared contexts; their replacements wait at the gate.
  for (let i = 0; i < 2; i += 1) await pool.render({ deadline: Date.now() + 15_000, run: async () => undefined });
  const outcome = renderUnder(() => pool.render({ deadline: Date.now() + 300, run: async () => undefined }));
  const code = await outcome.then(
    () => 'ok',
    (err: unknown) => (err as { code?: string }).code,
  );
  t.equal(code, 'render_timeout', 'the budget ran out waiting for a context');
  const failed = exporter.getFinishedSpans().filter((s) => s.name === 'browser.context' && s.attributes['error.code'] === 'render_timeout');
  t.equal(failed.length, 1, 'one browser.context span, marked render_timeout');
  t.equal(failed[0]!.attributes['tintype.prepared'], undefined, 'no context, so no prepared attribute');
});
