/**
 * The usage report written out (docs/operations.md "Reading usage"): a table for people, CSV for billing
 * jobs (RFC 4180, UTF-8, a header row, one row per key and month, column names that never
 * change meaning), and JSON (the same document the admin port answers).
 */
import { OPERATION_NAMES, type KeyUsage, type UsageReport } from './usage-report.ts';

export const FORMATS = ['table', 'csv', 'json'] as const;
export type UsageFormat = (typeof FORMATS)[number];

/** Statuses and error codes the ledger records (docs/operations.md "Usage ledger"), each a CSV column of its own. */
const CSV_STATUSES = ['200', '422', '499', '502', '504'] as const;
const CSV_ERRORS = ['url_rejected', 'render_failed', 'render_too_large', 'render_timeout'] as const;

/**
 * The CSV columns, in order. Documented in docs/operations.md "Reading usage"; a column is only ever added at the end,
 * never renamed, removed or moved.
 */
export const CSV_COLUMNS: ReadonlyArray<readonly [name: string, value: (month: string, k: KeyUsage) => string | number | null]> = [
  ['month', (m) => m],
  ['key_id', (_, k) => k.keyId],
  ['name', (_, k) => k.name],
  ['plan', (_, k) => k.plan],
  ['created_at', (_, k) => k.createdAt],
  ['revoked_at', (_, k) => k.revokedAt],
  ['monthly_quota', (_, k) => k.monthlyQuota],
  ['used', (_, k) => k.used],
  ['remaining', (_, k) => k.remaining],
  ['metered', (_, k) => k.metered],
  ['in_flight', (_, k) => k.inFlight],
  ['unsettled', (_, k) => k.unsettled],
  ['records', (_, k) => k.records],
  ...OPERATION_NAMES.map((o) => [`metered_${o.replaceAll('-', '_')}`, (_: string, k: KeyUsage) => k.operations[o]] as const),
  ['hits', (_, k) => k.hits],
  ['renders', (_, k) => k.renders],
  ...CSV_STATUSES.map((s) => [`status_${s}`, (_: string, k: KeyUsage) => k.statuses[s] ?? 0] as const),
  ['status_other', (_, k) => sumExcept(k.statuses, CSV_STATUSES)],
  ...CSV_ERRORS.map((e) => [`error_${e}`, (_: string, k: KeyUsage) => k.errors[e] ?? 0] as const),
  ['error_other', (_, k) => sumExcept(k.errors, CSV_ERRORS)],
];

function sumExcept(counts: Record<string, number>, known: readonly string[]): number {
  return Object.entries(counts).reduce((sum, [k, n]) => (known.includes(k) ? sum : sum + n), 0);
}

/** One CSV field (RFC 4180 section 2): quoted when it holds a comma, a quote or a line break. */
function csvField(v: string | number | null): string {
  if (v === null) return '';
  const s = String(v);
  return /[",\r\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
}

/** RFC 4180: CRLF after every record, the header included. */
export function toCsv(report: UsageReport): string {
  const lines = [CSV_COLUMNS.map(([name]) => name).join(',')];
  for (const k of report.keys) lines.push(CSV_COLUMNS.map(([, value]) => csvField(value(report.month, k))).join(','));
  return lines.map((l) => l + '\r\n').join('');
}

export function toJson(report: UsageReport): string {
  return JSON.stringify(report, null, 2) + '\n';
}

/** Columns padded to their widest cell; numbers right-aligned. */
function grid(rows: ReadonlyArray<ReadonlyArray<string | number>>): string[] {
  const widths: number[] = [];
  for (const r of rows) r.forEach((c, i) => (widths[i] = Math.max(widths[i] ?? 0, String(c).length)));
  return rows.map((r) => r.map((c, i) => (typeof c === 'number' ? String(c).padStart(widths[i]!) : String(c).padEnd(widths[i]!)))
    .join('  ').trimEnd());
}

const dash = (v: number | null): string | number => v ?? '-';

/** For people at a terminal: quota, then calls by operation, then answers by status and error. */
export function toTable(report: UsageReport): string {
  const { keys, totals } = report;
  const out = [`Usage for ${report.month} (UTC, ${report.from} to ${report.to}): ${keys.length} key${keys.length === 1 ? '' : 's'}`, ''];
  if (keys.length === 0) return out.join('\n');
  out.push(...grid([
    ['key', 'name', 'plan', 'quota', 'used', 'remaining', 'metered', 'in flight', 'unsettled'],
    ...keys.map((k) => [k.keyId, k.name || '-', k.plan, dash(k.monthlyQuota), k.used, dash(k.remaining), k.metered, k.inFlight, k.unsettled]),
    ['total', '', '', '', totals.used, '', totals.metered, totals.inFlight, totals.unsettled],
  ]), '');
  out.push(...grid([
    ['metered calls', ...OPERATION_NAMES, 'hits', 'renders'],
    ...keys.map((k) => [k.keyId, ...OPERATION_NAMES.map((o) => k.operations[o]), k.hits, k.renders]),
    ['total', ...OPERATION_NAMES.map((o) => totals.operations[o]), totals.hits, totals.renders],
  ]), '');
  const statuses = Object.keys(totals.statuses);
  const errors = Object.keys(totals.errors);
  if (statuses.length === 0 && errors.length === 0) return [...out, 'answers: none recorded', ''].join('\n');
  out.push(...grid([
    ['answers', ...statuses, ...errors],
    ...keys.map((k) => [k.keyId, ...statuses.map((s) => k.statuses[s] ?? 0), ...errors.map((e) => k.errors[e] ?? 0)]),
    ['total', ...statuses.map((s) => totals.statuses[s]!), ...errors.map((e) => totals.errors[e]!)],
  ]), '');
  return out.join('\n');
}

export function formatReport(report: UsageReport, format: UsageFormat): string {
  return format === 'csv' ? toCsv(report) : format === 'json' ? toJson(report) : toTable(report);
}
