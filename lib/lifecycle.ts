/**
 * The one lifecycle of anything that owns a process or a socket, and the one group every command
 * in bin/ runs its parts under: started in order, stopped in reverse, a failed stop logged and the
 * next part stopped all the same.
 */
import type { Logger } from './log.ts';

export interface Lifecycle {
  start(): Promise<void>;
  /** Stops accepting work, finishes or aborts what is in flight, releases every resource. */
  stop(signal?: NodeJS.Signals): Promise<void>;
  healthy(): boolean;
}

/** What a group stops: a part, or a resource to release (a telemetry exporter, a client). */
export interface Stoppable {
  stop(signal?: NodeJS.Signals): Promise<void> | void;
}

export interface LifecycleGroup {
  /**
   * Starts each part in turn. A part joins the group before its start, so one that fails half way
   * is stopped too; on a failure the whole group is stopped and the error rethrown. Once the group
   * is stopping, nothing more is started.
   */
  start(...parts: Array<Stoppable & { start(): Promise<void> }>): Promise<void>;
  /** Adds parts started elsewhere, or resources to release, to be stopped in their turn. */
  add(...parts: Stoppable[]): void;
  /** Stops every part, the last added first; each failure is logged as `event`. Safe to call again. */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

export function lifecycleGroup(logger: Logger, event = 'stop.failed'): LifecycleGroup {
  const parts: Stoppable[] = [];
  let stopping = false;
  const group: LifecycleGroup = {
    async start(...more) {
      for (const part of more) {
        if (stopping) return;
        parts.push(part);
        try {
          await part.start();
        } catch (err) {
          await group.stop();
          throw err;
        }
      }
    },
    add(...more) {
      parts.push(...more);
    },
    async stop(signal) {
      stopping = true;
      for (let part = parts.pop(); part !== undefined; part = parts.pop()) {
        try {
          await part.stop(signal);
        } catch (err) {
          logger.warn(event, { message: err instanceof Error ? err.message : 'unknown' });
        }
      }
    },
  };
  return group;
}
