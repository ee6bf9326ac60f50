/**
 * The egress audit trail's writer (docs/operations.md "Egress policy and audit"): renderers post each keyed
 * render's guard decisions to `POST /egress-audit` (lib/egress-audit.ts) on policy's renderer
 * listener; the key, the render (lease id) and the operation are taken from the lease's
 * signature. Records wait in a bounded queue and reach the store in batches, one transaction
 * each, off every request's path; records older than TINTYPE_EGRESS_AUDIT_DAYS are deleted in
 * bounded steps. What cannot be kept is counted, never silently lost.
 */
import type http from 'node:http';
import { readBody } from '../lib/body.ts';
import { EGRESS_AUDIT_BODY_LIMIT, parseAuditPost } from '../lib/egress-audit.ts';
import type { LeaseVerifier } from '../lib/lease.ts';
import type { Logger } from '../lib/log.ts';
import type { Registry } from '../lib/metrics.ts';
import type { EgressAuditRecord, EgressStore } from './store/egress-store.ts';

/** Records waiting for the store, at most; past it new ones are dropped (and counted). */
export const MAX_QUEUED = 200_000;
/** Records per transaction. */
const BATCH = 5_000;
const FLUSH_MS = 200;
const PRUNE_MS = 60_000;
/** Rows one prune step deletes; steps go on while they find that many, up to PRUNE_STEPS. */
const PRUNE_LIMIT = 20_000;
const PRUNE_STEPS = 50;
/** A post may come this long after its lease expired (the renderer retries after the render). */
const LATE_POST_MS = 60 * 60_000;
const DAY_MS = 86_400_000;

export interface AuditWriter {
  /** Answers one `POST /egress-audit`. */
  handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void>;
  /** Writes what is queued now (tests, stop). */
  flush(): Promise<void>;
  /** Deletes what is past the retention now; returns how many. */
  prune(): Promise<number>;
  start(): void;
  stop(): Promise<void>;
}

export function auditWriter(o: {
  store: EgressStore;
  leases: LeaseVerifier;
  days: number;
  logger: Logger;
  registry: Registry;
  now?: () => number;
}): AuditWriter {
  const now = o.now ?? Date.now;
  const records = o.registry.counter(
    'tintype_egress_audit_records_total',
    'Egress audit records by result: written, or dropped (policy\'s queue full, or past the guard\'s bound per render).',
  );
  const queue: EgressAuditRecord[] = [];
  let flushing: Promise<void> | undefined;
  let timers: NodeJS.Timeout[] = [];

  const answer = (res: http.ServerResponse, status: number): void => {
    res.writeHead(status, { 'content-length': 0 });
    res.end();
  };

  const writeNow = async (): Promise<void> => {
    while (queue.length > 0) {
      const batch = queue.splice(0, BATCH);
      try {
        await o.store.writeAudit(batch);
        records.inc({ result: 'written' }, batch.length);
      } catch (err) {
        // Back to the front, in order, for the next turn: the store may be restarting.
        queue.unshift(...batch);
        o.logger.warn('store_unavailable', { during: 'egress_audit', message: err instanceof Error ? err.message : String(err) });
        return;
      }
    }
  };
  const flush = (): Promise<void> => (flushing ??= writeNow().finally(() => (flushing = undefined)));

  const prune = async (): Promise<number> => {
    let total = 0;
    for (let step = 0; step < PRUNE_STEPS; step++) {
      const n = await o.store.pruneAudit(now() - o.days * DAY_MS, PRUNE_LIMIT);
      total += n;
      if (n < PRUNE_LIMIT) break;
    }
    return total;
  };

  return {
    async handle(req, res) {
      const read = await readBody(req, { limit: EGRESS_AUDIT_BODY_LIMIT });
      if (read.kind === 'too_large') return answer(res, 413);
      if (read.kind !== 'body') return;
      let post;
      try {
        post = parseAuditPost(JSON.parse(read.body.toString('utf8')));
      } catch {
        post = undefined;
      }
      if (post === undefined) return answer(res, 400);
      const claims = o.leases.verify(post.lease);
      if (claims === undefined || claims.expiresAt + LATE_POST_MS <= now()) {
        o.logger.warn('egress_audit_forged_lease', {});
        return answer(res, 401);
      }
      if (post.dropped > 0) {
        records.inc({ result: 'dropped' }, post.dropped);
        o.logger.warn('egress_audit.guard_bound', { key: claims.keyId, dropped: post.dropped });
      }
      const room = Math.max(0, MAX_QUEUED - queue.length);
      if (post.entries.length > room) records.inc({ result: 'dropped' }, post.entries.length - room);
      for (const e of post.entries.slice(0, room)) {
        queue.push({ ...e, keyId: claims.keyId, renderId: claims.id, operation: claims.operation });
      }
      answer(res, 204);
    },
    flush,
    prune,
    start() {
      const every = (ms: number, run: () => Promise<unknown>): NodeJS.Timeout => {
        const t = setInterval(() => void run().catch((err: unknown) => {
          o.logger.warn('store_unavailable', { during: 'egress_audit_prune', message: err instanceof Error ? err.message : String(err) });
        }), ms);
        t.unref();
        return t;
      };
      timers = [every(FLUSH_MS, flush), every(PRUNE_MS, prune)];
    },
    async stop() {
      for (const t of timers) clearInterval(t);
      timers = [];
      await flushing;
      await flush();
    },
  };
}
