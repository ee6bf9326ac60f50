/**
 * Writes a batch of ledger records in one statement and one transaction (tintype_ledger_insert,
 * policy/store/ledger-schema.ts): the month partitions made when missing, the records inserted
 * with ON CONFLICT (lease_id, month) DO NOTHING, and the tallies counted for the records actually
 * inserted. Idempotent by lease: a batch written twice inserts and counts nothing the second time.
 */
import type { UsageRecord } from '../store/store.ts';
import type { Queryable } from './partitions.ts';

/** Writes `records`, in stream order (oldest first); returns how many were new. */
export async function writeLedgerBatch(db: Queryable, records: readonly UsageRecord[]): Promise<number> {
  if (records.length === 0) return 0;
  // Records go in as given: the sink gives them in stream order, which is one order for every
  // writer (two batches holding some of the same leases never wait in a cycle), and the ledger's
  // `seq` then keeps the order calls were settled in, which `usage` reads back.
  const col = <T>(f: (r: UsageRecord) => T): T[] => records.map(f);
  const r = await db.query(
    `SELECT tintype_ledger_insert($1::text[], $2::text[], $3::text[], $4::text[], $5::int[], $6::text[], $7::text[],
      $8::boolean[], $9::text[], $10::bigint[], $11::bigint[]) AS n`,
    [col((r) => r.leaseId), col((r) => r.keyId), col((r) => r.operation), col((r) => r.month), col((r) => r.status),
      col((r) => r.error), col((r) => r.cache), col((r) => r.metered), col((r) => r.outcome), col((r) => r.checkedAt),
      col((r) => r.recordedAt)],
  );
  return Number(r.rows[0]?.['n'] ?? 0);
}
