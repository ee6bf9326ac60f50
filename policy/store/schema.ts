/**
 * Policy waiting for its schema instead of migrating (TINTYPE_MIGRATE=wait, the chart): the
 * migrations run once per upgrade, before the new pods start, in `tintype migrate` with rights of
 * their own (docs/helm.md, "Upgrade"); each pod polls, read-only, until every migration its code
 * knows is applied, and is not ready meanwhile.
 */
import type { Logger } from '../../lib/log.ts';
import type { PolicyStore } from './store.ts';

/** How often a waiting pod asks again: the migration has no clock of ours to beat. */
export const SCHEMA_POLL_MS = 2_000;

export interface SchemaWait {
  /** Resolves once nothing is pending; rejects when stopped first. */
  done: Promise<void>;
  stop(): void;
}

export function waitForSchema(store: PolicyStore, logger: Logger, pollMs = SCHEMA_POLL_MS): SchemaWait {
  let stopped = false;
  let wake: (() => void) | undefined;
  const sleep = () => new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, pollMs);
    wake = () => {
      clearTimeout(timer);
      resolve();
    };
  });
  const done = (async () => {
    let said = '';
    for (;;) {
      if (stopped) throw new Error('stopped while waiting for the schema');
      let pending: number[] | undefined;
      try {
        pending = await store.pendingMigrations();
      } catch (err) {
        // The store may be restarting with the upgrade: ask again.
        logger.warn('store_unavailable', { during: 'schema_wait', message: err instanceof Error ? err.message : String(err) });
      }
      if (pending !== undefined && pending.length === 0) return;
      const now = pending?.join(',') ?? said;
      if (pending !== undefined && now !== said) logger.info('schema_waiting', { pending: now, hint: 'run `tintype migrate` (the chart runs it as a hook Job)' });
      said = now;
      await sleep();
    }
  })();
  return {
    done,
    stop() {
      stopped = true;
      wake?.();
    },
  };
}
