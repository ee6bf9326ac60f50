/**
 * One render's scope (docs/operations.md, "Slots and supervision"; spec Part 7 `render_timeout`,
 * `render_failed`): its abort signal (the deadline, the client going away, its browser or page
 * dying), its tally of the guard's refusals, and its `browser.context` span (docs/operations.md, "Telemetry"),
 * from asking for a context to the context's close. Everything it sets up, end() takes down.
 */
import { SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import { ServiceError } from '../../lib/errors.ts';
import { addTally, emptyTally, type RenderTally } from '../../lib/guard-contract.ts';
import { untilAborted, withTimeout } from './bounded-wait.ts';
import { INSTANCE_GONE, type HeldLane } from './instance.ts';
import type { PreparedPage } from './prepared-page.ts';
import { RenderNotOpened } from './guard-endpoint.ts';
import { droppedForSize } from './socket-transport.ts';
import type { EgressAuditSink, RenderContext, RenderJob } from './types.ts';

/** How long a page that failed its render has to prove it is still alive. */
const PROBE_TIMEOUT_MS = 2_000;

const tracer = trace.getTracer('tintype');

/** Where a render's refusals are counted. */
export interface TallySource {
  /** Reads (and clears) the guard's count for a render token. */
  read(token: string): Promise<RenderTally>;
  /** The guard could not be asked: the walls are no longer proven. */
  lost(err: unknown): void;
  /** Opens a render's token with its lease at the guard; rejects when the guard did not (RenderNotOpened) or could not answer. */
  open(token: string, lease: string): Promise<void>;
  /** Takes a leased render's guard decisions once it ended (the audit trail). */
  audit?: EgressAuditSink;
}

/** Marks a span failed with the error's code only, as renderer/operations/telemetry.ts does. */
function failSpan(span: Span, err: unknown): void {
  const code = err instanceof ServiceError ? err.code : 'internal';
  span.setAttribute('error.code', code);
  span.setStatus({ code: SpanStatusCode.ERROR, message: code });
}

export class RenderScope {
  private readonly control = new AbortController();
  private readonly timer: NodeJS.Timeout;
  private readonly onClientGone: () => void;
  private readonly unhooks: Array<() => void> = [];
  /** Not made active: navigate/capture stay children of the `render` span. */
  private readonly span: Span = tracer.startSpan('browser.context');
  private readonly total = emptyTally();
  private token: string | undefined;
  /** The instance the render entered. */
  private held: HeldLane['instance'] | undefined;
  /** The lease the render's token was opened with at the guard; its decisions are recorded. */
  private lease: string | undefined;
  /** Whether the whole tally was read (finalTally): nothing of the audit is left at the guard. */
  private read = false;
  /**
   * Set when the guard could not be asked for this render's count: then nothing can tell what
   * the render reached, and the pool no longer knows its walls hold.
   */
  private guardLost = false;

  constructor(
    private readonly job: Pick<RenderJob<unknown>, 'deadline' | 'signal'>,
    private readonly tallies: TallySource,
  ) {
    const control = this.control;
    this.timer = setTimeout(() => control.abort(new ServiceError('render_timeout')), Math.max(0, job.deadline - Date.now()));
    this.onClientGone = () => control.abort(job.signal?.reason ?? new DOMException('the client went away', 'AbortError'));
    if (job.signal?.aborted) this.onClientGone();
    job.signal?.addEventListener('abort', this.onClientGone, { once: true });
  }

  /** Aborted when the deadline passes, the client goes away, or the render's browser or page dies. */
  get signal(): AbortSignal {
    return this.control.signal;
  }

  /** Settles like `promise`, or rejects as soon as the render is aborted. */
  bound<T>(promise: Promise<T>): Promise<T> {
    return untilAborted(promise, this.control.signal);
  }

  /** Enters the held lane and gives its page: from now the render fails when its browser dies or its page goes. */
  enter(held: HeldLane): PreparedPage {
    const { instance, lane } = held;
    this.span.setAttributes({ 'tintype.prepared': held.prepared, 'tintype.browser.generation': instance.generation });
    this.held = instance;
    const fail = (): void => this.control.abort(this.browserFailure());
    const page = lane.page!;
    this.unhooks.push(instance.onDeath(fail));
    // The page's renderer process crashed (or the page closed itself): nothing more will come.
    this.unhooks.push(page.onGone(fail));
    // The lane's relay already names this render (set while the lane was prepared).
    if (lane.token === undefined) throw new ServiceError('render_failed');
    this.token = lane.token;
    return page;
  }

  /**
   * Opens the render's token with the call's lease at the guard, before the page gets any work,
   * so every fetch is held to the key's egress policy (docs/architecture.md §7 rule 4a). A guard
   * that answers but will not open it (no lease public key, not the one that signed) fails the
   * render as guard_unverified; one that does not answer is lost, as for a tally.
   */
  async open(lease: string | undefined): Promise<void> {
    if (lease === undefined) return;
    try {
      await this.bound(this.tallies.open(this.token!, lease));
    } catch (err) {
      if (this.signal.aborted) throw err;
      if (!(err instanceof RenderNotOpened)) {
        this.guardLost = true;
        this.tallies.lost(err);
      }
      throw new ServiceError('guard_unverified');
    }
    this.lease = lease;
  }

  /** Runs the job's work on `page` until it settles or the render is aborted. */
  async run<T>(run: (ctx: RenderContext) => Promise<T>, page: PreparedPage): Promise<T> {
    const work = run({ cdp: page, page: () => this.bound(page.page()), signal: this.signal, tally: () => this.tally() });
    work.catch(() => {}); // once aborted, the page's calls reject on their own
    try {
      return await this.bound(work);
    } catch (err) {
      if (this.signal.aborted) throw err;
      // A target the render could not reach while the guard was gone is our failure, not the target's.
      if (this.guardLost) throw new ServiceError('guard_unverified');
      if (err instanceof ServiceError) throw err;
      // A failed navigation can be the first sign of a crashed renderer, ahead of the crash
      // event: a page that no longer answers is a failed render (spec Part 7 render_failed).
      const alive = await this.bound(
        withTimeout(page.session.send('Runtime.evaluate', { expression: '1', returnByValue: true }), PROBE_TIMEOUT_MS).then(
          () => true,
          () => false,
        ),
      );
      if (!alive) throw this.browserFailure();
      throw err;
    }
  }

  /**
   * The render's answer when its browser or page is gone: render_failed, or render_too_large when
   * the browser's connection was dropped for a frame past its bound (socket-transport.ts): a frame
   * that long carries output past the maximum (spec Part 7).
   */
  private browserFailure(): ServiceError {
    const browser = this.held?.browser;
    return new ServiceError(browser !== undefined && droppedForSize(browser) ? 'render_too_large' : 'render_failed');
  }

  /** The render's whole tally, read once its lane is cut; guard_unverified when the guard cannot answer. */
  async finalTally(): Promise<RenderTally> {
    try {
      const total = await this.bound(this.tally());
      this.read = true;
      return total;
    } catch (err) {
      if (this.signal.aborted) throw err;
      throw new ServiceError('guard_unverified');
    }
  }

  /** What the render throws for `err`: the abort's reason once aborted, render_failed for a browser gone. */
  failure(err: unknown): unknown {
    if (this.signal.aborted) return this.signal.reason;
    if (err === INSTANCE_GONE) return new ServiceError('render_failed');
    return err;
  }

  /**
   * Ends the scope: timer, client listener and death hooks are dropped; the held lane (if the
   * render got one) is released in the background, and the span ends once its context is closed.
   */
  end(held: HeldLane | undefined): void {
    clearTimeout(this.timer);
    this.job.signal?.removeEventListener('abort', this.onClientGone);
    for (const unhook of this.unhooks) unhook();
    const span = this.span;
    if (held === undefined) {
      failSpan(span, this.signal.aborted ? this.signal.reason : new ServiceError('render_failed'));
      span.end();
      return;
    }
    const { instance, lane } = held;
    void instance
      .release(lane)
      .then((closed) => {
        span.setAttribute('tintype.context_closed', closed);
        if (!closed) failSpan(span, new ServiceError('render_failed'));
      })
      .finally(() => {
        span.end();
        instance.renderEnded();
        void this.sendAudit();
      });
  }

  /**
   * Hands the render's guard decisions to the audit sink, after the render (its lane cut): a
   * render that failed before its whole tally was read reads the rest first.
   */
  private async sendAudit(): Promise<void> {
    const lease = this.lease;
    const sink = this.tallies.audit;
    if (lease === undefined || sink === undefined) return;
    if (!this.read) {
      try {
        addTally(this.total, await this.tallies.read(this.token!));
      } catch {
        // The guard could not answer: what was read already is recorded.
      }
    }
    const entries = this.total.audit ?? [];
    const dropped = this.total.auditDropped ?? 0;
    if (entries.length > 0 || dropped > 0) sink(lease, entries, dropped);
  }

  /** Refusals so far for this render; counts accumulate over calls. */
  private async tally(): Promise<RenderTally> {
    let part: RenderTally;
    try {
      part = await this.tallies.read(this.token!);
    } catch (err) {
      this.guardLost = true;
      this.tallies.lost(err);
      throw err;
    }
    addTally(this.total, part);
    return { ...this.total, refused: [...this.total.refused] };
  }
}
