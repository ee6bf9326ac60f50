/**
 * The egress part of policy's store (docs/operations.md "Egress policy and audit"): keys' policies and the
 * audit trail, in the same database as the ledger. sqlite.ts and postgres.ts each build one on
 * their own connection (egress-sqlite.ts, egress-postgres.ts); one suite runs against both.
 */
import type { EgressAuditEntry, EgressDecision, EgressPolicy } from '../../lib/egress.ts';

/** One guard decision of a keyed render, with what the lease said. */
export interface EgressAuditRecord extends EgressAuditEntry {
  keyId: string;
  /** The lease id: one render. */
  renderId: string;
  operation: string;
}

/** What `tintype egress` and the admin port ask for. */
export interface AuditQuery {
  keyId: string;
  /** Epoch ms, inclusive. */
  since?: number;
  /** Epoch ms, exclusive. */
  until?: number;
  decision?: EgressDecision;
  /** At most this many records, oldest first. */
  limit: number;
}

export interface EgressStore {
  /** Sets (or with undefined, clears) a key's policy; false when there is no such key. */
  setPolicy(keyId: string, policy: EgressPolicy | undefined, now: number): Promise<boolean>;
  /** Moves whenever a policy changes: a reader reads policies() again only then. */
  generation(): Promise<number>;
  /** Every key's policy and every key id, with the generation they were read at. */
  policies(): Promise<{ generation: number; byKey: Map<string, EgressPolicy>; keys: Set<string> }>;
  /** One key's policy, read now (undefined: none). */
  policyOf(keyId: string): Promise<EgressPolicy | undefined>;
  /** Writes records in one transaction. */
  writeAudit(records: readonly EgressAuditRecord[]): Promise<void>;
  readAudit(q: AuditQuery): Promise<EgressAuditRecord[]>;
  /** Deletes at most `limit` records older than `before`; returns how many. */
  pruneAudit(before: number, limit: number): Promise<number>;
}

/** A stored row as both stores read it. */
export interface AuditRow {
  at: number | string;
  key_id: string;
  render_id: string;
  operation: string;
  host: string | null;
  port: number | null;
  decision: EgressDecision;
  reason: EgressAuditRecord['reason'];
  mode: EgressAuditRecord['mode'];
}

export function recordFromRow(r: AuditRow): EgressAuditRecord {
  return {
    at: Number(r.at), keyId: r.key_id, renderId: r.render_id, operation: r.operation, host: r.host,
    port: r.port === null ? null : Number(r.port), decision: r.decision, reason: r.reason, mode: r.mode,
  };
}
