/**
 * How a cache backend reports the writes it has to skip (a full disk, Redis away): a failure is
 * logged when it begins and when its cause changes, and the recovery once, so a cache that
 * cannot store writes two lines for the whole outage instead of one per render. A render never
 * fails for it (RenderCache.set). Only the error's code goes in the line: its message can name
 * a path.
 */
import type { Fields, Logger } from '../../lib/log.ts';

export class FailureLog {
  private readonly logger: Logger;
  private readonly event: string;
  private readonly fields: Fields;
  /** The code of the failure in progress, or undefined while the backend works. */
  private failing: string | undefined;

  /** Logs `<event>_failed` (warn) and `<event>_resumed` (info) with `fields`. */
  constructor(logger: Logger, event: string, fields: Fields) {
    this.logger = logger;
    this.event = event;
    this.fields = fields;
  }

  /** One attempt failed: logged only when no failure, or another one, was in progress. */
  failed(err: unknown): void {
    const code = codeOf(err);
    if (this.failing === code) return;
    this.failing = code;
    this.logger.warn(`${this.event}_failed`, { ...this.fields, code });
  }

  /** One attempt worked: the end of a failure in progress is logged. */
  succeeded(): void {
    if (this.failing === undefined) return;
    this.logger.info(`${this.event}_resumed`, { ...this.fields, after: this.failing });
    this.failing = undefined;
  }
}

/** A system error's code (`ENOSPC`, `ECONNREFUSED`, …), else the error's class name. */
function codeOf(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && /^[A-Z0-9_]{1,40}$/.test(code)) return code;
  return err instanceof Error ? err.name : 'unknown';
}
