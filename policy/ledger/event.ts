/**
 * One ledger event on the stream (docs/operations.md "Ledger stream"): `XADD tintype:ledger * e
 * <JSON>`, the JSON exactly a UsageRecord (policy/store/store.ts). Read back field by field: an
 * event that is not one is refused, never half-written.
 */
import type { UsageRecord } from '../store/store.ts';

/** The stream every closed lease is appended to, and the field that holds its record. */
export const LEDGER_STREAM = 'tintype:ledger';
export const LEDGER_FIELD = 'e';

const MONTH = /^\d{4}-(0[1-9]|1[0-2])$/;

const text = (v: unknown): v is string => typeof v === 'string' && v.length > 0 && v.length <= 200;
const orNull = <T>(v: unknown, is: (v: unknown) => v is T): v is T | null => v === null || is(v);
const instant = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;
const status = (v: unknown): v is number => Number.isInteger(v) && (v as number) >= 100 && (v as number) <= 599;

/** The record an event's JSON holds; undefined when it is not a whole UsageRecord. */
export function parseLedgerEvent(json: string): UsageRecord | undefined {
  let v: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(json);
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return undefined;
    v = parsed as Record<string, unknown>;
  } catch {
    return undefined;
  }
  if (!text(v['leaseId']) || !text(v['keyId']) || !text(v['operation'])) return undefined;
  if (typeof v['month'] !== 'string' || !MONTH.test(v['month'])) return undefined;
  if (!orNull(v['status'], status) || !orNull(v['error'], text) || !orNull(v['cache'], text)) return undefined;
  if (typeof v['metered'] !== 'boolean' || (v['outcome'] !== 'settled' && v['outcome'] !== 'unsettled')) return undefined;
  if (!instant(v['checkedAt']) || !instant(v['recordedAt'])) return undefined;
  return {
    leaseId: v['leaseId'], keyId: v['keyId'], operation: v['operation'], month: v['month'], status: v['status'],
    error: v['error'], cache: v['cache'], metered: v['metered'], outcome: v['outcome'],
    checkedAt: v['checkedAt'], recordedAt: v['recordedAt'],
  };
}

/** The event of a record, as a writer appends it. */
export function ledgerEvent(r: UsageRecord): string {
  return JSON.stringify(r);
}
