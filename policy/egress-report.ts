/**
 * Reading the egress audit trail (docs/operations.md "Egress policy and audit"): `tintype egress --key ID
 * [--since T] [--until T] [--decision D] [--format table|csv|json]` and `GET /egress?key=ID…` on
 * policy's admin listener, never on a port callers or renderers reach. Both take the same
 * parameters and print the same rows: time, key, render (its lease id), operation, host, port,
 * decision, reason, mode. Bad input is an EgressInputError with a message naming the parameter.
 */
import type http from 'node:http';
import { drain } from '../lib/body.ts';
import { EGRESS_DECISIONS, type EgressDecision } from '../lib/egress.ts';
import type { Logger } from '../lib/log.ts';
import { LEASE_ID_FORM } from '../lib/policy-contract.ts';
import type { AuditQuery, EgressAuditRecord, EgressStore } from './store/egress-store.ts';

export const EGRESS_PATH = '/egress';
export const EGRESS_FORMATS = ['table', 'csv', 'json'] as const;
export type EgressFormat = (typeof EGRESS_FORMATS)[number];
/** Records one read answers at most, oldest first; a longer trail is read in windows (--since). */
export const MAX_READ = 100_000;

export class EgressInputError extends Error {
  override name = 'EgressInputError';
}

/** A time as `YYYY-MM-DD` (UTC midnight) or an ISO 8601 date-time with its zone. */
function parseTime(name: string, text: string): number {
  const form = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2}))?$/;
  const at = form.test(text) ? Date.parse(text.length === 10 ? `${text}T00:00:00Z` : text) : NaN;
  if (!Number.isFinite(at)) throw new EgressInputError(`${name} must be YYYY-MM-DD or an ISO 8601 time with its zone (got "${text.slice(0, 40)}")`);
  return at;
}

/** The query of the parameters given (names without their dashes); throws EgressInputError. */
export function parseAuditQuery(p: { key?: string | undefined; since?: string | undefined; until?: string | undefined; decision?: string | undefined }): AuditQuery {
  if (p.key === undefined || !LEASE_ID_FORM.test(p.key)) throw new EgressInputError('key must be a key id (tintype keys list shows them)');
  const q: AuditQuery = { keyId: p.key, limit: MAX_READ };
  if (p.since !== undefined) q.since = parseTime('since', p.since);
  if (p.until !== undefined) q.until = parseTime('until', p.until);
  if (q.since !== undefined && q.until !== undefined && q.until <= q.since) throw new EgressInputError('until must be later than since');
  if (p.decision !== undefined) {
    if (!(EGRESS_DECISIONS as readonly string[]).includes(p.decision)) {
      throw new EgressInputError(`decision must be one of ${EGRESS_DECISIONS.join(', ')} (got "${p.decision.slice(0, 40)}")`);
    }
    q.decision = p.decision as EgressDecision;
  }
  return q;
}

const COLUMNS = ['time', 'key', 'render', 'operation', 'host', 'port', 'decision', 'reason', 'mode'] as const;

function row(r: EgressAuditRecord): Array<string | number | null> {
  return [new Date(r.at).toISOString(), r.keyId, r.renderId, r.operation, r.host, r.port, r.decision, r.reason, r.mode];
}

function csvField(v: string | number | null): string {
  const s = v === null ? '' : String(v);
  return /[",\r\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
}

/** The records in one of the formats; JSON is an array of objects named as the columns. */
export function formatAudit(records: readonly EgressAuditRecord[], format: EgressFormat): string {
  if (format === 'json') {
    return JSON.stringify(records.map((r) => Object.fromEntries(COLUMNS.map((c, i) => [c, row(r)[i]])))) + '\n';
  }
  if (format === 'csv') return [COLUMNS.join(','), ...records.map((r) => row(r).map(csvField).join(','))].join('\r\n') + '\r\n';
  return [COLUMNS.join('\t'), ...records.map((r) => row(r).map((v) => (v === null ? '-' : String(v))).join('\t'))].join('\n') + '\n';
}

/**
 * Answers `GET /egress?key=ID[&since=…][&until=…][&decision=…][&format=…]` (JSON by default);
 * served where `/usage` is (policy/usage-http.ts).
 */
export function egressHandler(o: { store: EgressStore; logger: Logger }): http.RequestListener {
  const send = (res: http.ServerResponse, status: number, body: string, type = 'application/json; charset=utf-8'): void => {
    res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  };
  return (req, res) => {
    drain(req);
    if (req.method !== 'GET') return send(res, 405, JSON.stringify({ error: 'method_not_allowed' }));
    const params = new URLSearchParams((req.url ?? '').split('?')[1] ?? '');
    let q: AuditQuery;
    let format: EgressFormat;
    try {
      for (const name of params.keys()) {
        if (!['key', 'since', 'until', 'decision', 'format'].includes(name)) throw new EgressInputError(`unknown parameter "${name.slice(0, 40)}"`);
      }
      const get = (n: string): string | undefined => params.get(n) ?? undefined;
      q = parseAuditQuery({ key: get('key'), since: get('since'), until: get('until'), decision: get('decision') });
      format = (get('format') ?? 'json') as EgressFormat;
      if (!(EGRESS_FORMATS as readonly string[]).includes(format)) throw new EgressInputError(`format must be one of ${EGRESS_FORMATS.join(', ')}`);
    } catch (err) {
      return send(res, 400, JSON.stringify({ error: 'bad_request', message: (err as Error).message }));
    }
    o.store.readAudit(q).then(
      (records) => send(res, 200, formatAudit(records, format), format === 'json' ? undefined : format === 'csv' ? 'text/csv; charset=utf-8' : 'text/plain; charset=utf-8'),
      (err: unknown) => {
        o.logger.warn('store_unavailable', { during: 'egress_read', message: err instanceof Error ? err.message : String(err) });
        send(res, 503, JSON.stringify({ error: 'busy' }));
      },
    );
  };
}
