/**
 * Whether the walls are proven (docs/security.md "Start-up self-test"; spec Part 7 `guard_unverified`):
 * the self-test runs until it passes; a guard that stops answering after it passed is lost, and
 * the self-test runs again until it passes. Says the guard's state as the operator reads it.
 */
import type { Logger } from '../../lib/log.ts';
import type { GuardState } from '../../lib/state-contract.ts';
import { runSelfTest } from './self-test.ts';
import { Timers } from './timers.ts';
import type { RenderJob, RenderResult } from './types.ts';

const SELF_TEST_RETRY_MS = 5_000;
const SELF_TEST_BUDGET_MS = 20_000;

export interface VerificationOptions {
  /** The pool's render path, which the self-test's render takes before the pool is verified. */
  render: <T>(job: RenderJob<T>) => Promise<RenderResult<T>>;
  allowCidrs: readonly string[];
  logger: Logger;
  /** Between a failed self-test and the next try. */
  retryMs?: number;
  /** The self-test render's whole budget. */
  budgetMs?: number;
}

export class Verification {
  private verified = false;
  /** The self-test has passed at least once: a guard not verified now was lost, not yet unproven. */
  private everVerified = false;
  private stopped = false;
  private readonly timers = new Timers();
  private readonly stopping = new AbortController();

  constructor(private readonly options: VerificationOptions) {}

  /** True while the self-test has passed and the guard answers. */
  passed(): boolean {
    return this.verified;
  }

  state(): GuardState {
    return this.verified ? 'verified' : this.everVerified ? 'lost' : 'unverified';
  }

  /** Runs the self-test until it passes; resolves after the first try. */
  async run(): Promise<void> {
    if (this.stopped || this.verified) return;
    const report = await runSelfTest({
      render: this.options.render,
      budgetMs: this.options.budgetMs ?? SELF_TEST_BUDGET_MS,
      signal: this.stopping.signal,
      allowCidrs: this.options.allowCidrs,
    });
    if (this.stopped) return;
    const logger = this.options.logger;
    if (report.passed) {
      this.verified = true;
      this.everVerified = true;
      logger.info('guard.self_test_passed', { blocked: report.blocked });
      return;
    }
    logger.error('guard.self_test_failed', {
      detail: report.failure,
      canaryConnections: report.canaryConnections,
      blocked: report.blocked,
    });
    this.timers.after(this.options.retryMs ?? SELF_TEST_RETRY_MS, () => void this.run());
  }

  /**
   * The guard stopped answering after the self-test had passed (its process or pod is gone): the
   * walls are no longer proven, so the pool takes no render (503 `guard_unverified`, not metered,
   * and readiness fails) until the self-test passes again.
   */
  lost(err: unknown): void {
    if (!this.verified || this.stopped) return;
    this.verified = false;
    this.options.logger.error('guard.lost', { detail: (err as Error).message });
    void this.run();
  }

  /** Ends the self-test's render now (no client waits for it) and tries no more. */
  stop(): void {
    this.stopped = true;
    this.stopping.abort(new Error('the pool is stopping'));
    this.timers.clear();
  }
}
