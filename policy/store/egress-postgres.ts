/** The egress store on policy's PostgreSQL pool (egress-store.ts). */
import type pg from 'pg';
import { egressText, parseEgressText } from '../../lib/egress.ts';
import { type AuditRow, type EgressStore, recordFromRow } from './egress-store.ts';

export function postgresEgress(pool: pg.Pool): EgressStore {
  return {
    async setPolicy(keyId, policy, now) {
      // One statement: the row and the generation move in one transaction, or neither does.
      const r = await pool.query(
        `WITH k AS (SELECT id FROM api_keys WHERE id = $1),
          cleared AS (DELETE FROM key_egress WHERE key_id IN (SELECT id FROM k) AND $2::text IS NULL RETURNING 1),
          put AS (INSERT INTO key_egress (key_id, policy, updated_at) SELECT id, $2, $3 FROM k WHERE $2::text IS NOT NULL
            ON CONFLICT (key_id) DO UPDATE SET policy = excluded.policy, updated_at = excluded.updated_at RETURNING 1),
          bumped AS (UPDATE egress_generation SET n = n + 1 WHERE id = 1 AND EXISTS (SELECT 1 FROM k) RETURNING 1)
        SELECT EXISTS (SELECT 1 FROM k) AS found, (SELECT count(*) FROM cleared) + (SELECT count(*) FROM put) + (SELECT count(*) FROM bumped) AS n`,
        [keyId, policy === undefined ? null : egressText(policy), now],
      );
      return r.rows[0]?.found === true;
    },
    async generation() {
      const r = await pool.query({ name: 'egress_generation', text: 'SELECT n FROM egress_generation WHERE id = 1' });
      return Number(r.rows[0]?.n ?? 0);
    },
    async policies() {
      // One statement, one snapshot: the generation read belongs to the rows read.
      const r = await pool.query(`SELECT (SELECT n FROM egress_generation WHERE id = 1) AS n,
        coalesce((SELECT json_agg(json_build_array(key_id, policy)) FROM key_egress), '[]'::json) AS rows,
        coalesce((SELECT json_agg(id) FROM api_keys), '[]'::json) AS keys`);
      const rows = r.rows[0].rows as Array<[string, string]>;
      return {
        generation: Number(r.rows[0].n),
        byKey: new Map(rows.map(([k, p]) => [k, parseEgressText(p)])),
        keys: new Set(r.rows[0].keys as string[]),
      };
    },
    async policyOf(keyId) {
      const r = await pool.query({ name: 'egress_policy_of', text: 'SELECT policy FROM key_egress WHERE key_id = $1', values: [keyId] });
      return r.rows[0] === undefined ? undefined : parseEgressText(r.rows[0].policy as string);
    },
    async writeAudit(records) {
      if (records.length === 0) return;
      const col = <T>(f: (r: (typeof records)[number]) => T): T[] => records.map(f);
      await pool.query(
        `INSERT INTO egress_audit (at, key_id, render_id, operation, host, port, decision, reason, mode)
          SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::int[], $7::text[], $8::text[], $9::text[])`,
        [col((r) => r.at), col((r) => r.keyId), col((r) => r.renderId), col((r) => r.operation), col((r) => r.host),
          col((r) => r.port), col((r) => r.decision), col((r) => r.reason), col((r) => r.mode)],
      );
    },
    async readAudit(q) {
      const r = await pool.query(
        `SELECT at, key_id, render_id, operation, host, port, decision, reason, mode FROM egress_audit
          WHERE key_id = $1 AND at >= $2 AND at < $3 AND ($4::text IS NULL OR decision = $4) ORDER BY at, seq LIMIT $5`,
        [q.keyId, q.since ?? 0, q.until ?? Number.MAX_SAFE_INTEGER, q.decision ?? null, q.limit],
      );
      return (r.rows as AuditRow[]).map(recordFromRow);
    },
    async pruneAudit(before, limit) {
      const r = await pool.query(
        'DELETE FROM egress_audit WHERE ctid = ANY (ARRAY(SELECT ctid FROM egress_audit WHERE at < $1 ORDER BY at LIMIT $2))',
        [before, limit],
      );
      return r.rowCount ?? 0;
    },
  };
}
