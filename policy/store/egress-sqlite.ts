/** The egress store on policy's SQLite connection (egress-store.ts). */
import { type EgressPolicy, egressText, parseEgressText } from '../../lib/egress.ts';
import type { SqliteDatabase } from './sqlite-driver.ts';
import { type AuditRow, type EgressStore, recordFromRow } from './egress-store.ts';

export function sqliteEgress(db: SqliteDatabase): EgressStore {
  // Prepared on first use: the tables exist only after migrate().
  let s: ReturnType<typeof prepare> | undefined;
  const st = (): ReturnType<typeof prepare> => (s ??= prepare(db));
  const setTx = db.transaction((keyId: string, policy: EgressPolicy | undefined, now: number): boolean => {
    const q = st();
    if (q.hasKey.get(keyId) === undefined) return false;
    if (policy === undefined) q.clear.run(keyId);
    else q.set.run(keyId, egressText(policy), now);
    q.bump.run();
    return true;
  });
  const writeTx = db.transaction((records: Parameters<EgressStore['writeAudit']>[0]) => {
    const q = st();
    for (const r of records) q.insert.run(r.at, r.keyId, r.renderId, r.operation, r.host, r.port, r.decision, r.reason, r.mode);
  });
  return {
    async setPolicy(keyId, policy, now) {
      return setTx.immediate(keyId, policy, now);
    },
    async generation() {
      return (st().generation.get() as { n: number }).n;
    },
    async policies() {
      const read = db.transaction(() => ({
        generation: (st().generation.get() as { n: number }).n,
        rows: st().all.all() as Array<{ key_id: string; policy: string }>,
        keys: st().keys.all() as Array<{ id: string }>,
      }));
      const { generation, rows, keys } = read();
      return { generation, byKey: new Map(rows.map((r) => [r.key_id, parseEgressText(r.policy)])), keys: new Set(keys.map((k) => k.id)) };
    },
    async policyOf(keyId) {
      const row = st().one.get(keyId) as { policy: string } | undefined;
      return row === undefined ? undefined : parseEgressText(row.policy);
    },
    async writeAudit(records) {
      if (records.length > 0) writeTx.immediate(records);
    },
    async readAudit(q) {
      const rows = st().read.all(q.keyId, q.since ?? 0, q.until ?? Number.MAX_SAFE_INTEGER, q.decision ?? null, q.decision ?? null, q.limit);
      return (rows as AuditRow[]).map(recordFromRow);
    },
    async pruneAudit(before, limit) {
      return st().prune.run(before, limit).changes;
    },
  };
}

function prepare(db: SqliteDatabase) {
  return {
    hasKey: db.prepare('SELECT 1 FROM api_keys WHERE id = ?'),
    set: db.prepare('INSERT INTO key_egress (key_id, policy, updated_at) VALUES (?, ?, ?) ON CONFLICT (key_id) DO UPDATE SET policy = excluded.policy, updated_at = excluded.updated_at'),
    clear: db.prepare('DELETE FROM key_egress WHERE key_id = ?'),
    bump: db.prepare('UPDATE egress_generation SET n = n + 1 WHERE id = 1'),
    generation: db.prepare('SELECT n FROM egress_generation WHERE id = 1'),
    all: db.prepare('SELECT key_id, policy FROM key_egress'),
    one: db.prepare('SELECT policy FROM key_egress WHERE key_id = ?'),
    keys: db.prepare('SELECT id FROM api_keys'),
    insert: db.prepare(`INSERT INTO egress_audit (at, key_id, render_id, operation, host, port, decision, reason, mode)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`),
    read: db.prepare(`SELECT at, key_id, render_id, operation, host, port, decision, reason, mode FROM egress_audit
      WHERE key_id = ? AND at >= ? AND at < ? AND (? IS NULL OR decision = ?) ORDER BY at, rowid LIMIT ?`),
    prune: db.prepare('DELETE FROM egress_audit WHERE rowid IN (SELECT rowid FROM egress_audit WHERE at < ? ORDER BY at LIMIT ?)'),
  };
}
