/**
 * The usage report (docs/operations.md "Reading usage"): per key and UTC month, what the ledger holds,
 * folded from a read-only snapshot of the store. Pure: the snapshot comes from a reader
 * (usage-reader.ts), the plans from the settings, so both stores give the same report.
 */
import { OPERATIONS, type Operation } from '../lib/policy-contract.ts';
import { monthOf } from './calendar.ts';
import type { Plans } from './plans.ts';
import type { KeyRecord } from './store/store.ts';

/** Bad input from whoever asked (a month that is not one, an unknown key): exit 2 or HTTP 400/404. */
export class UsageInputError extends Error {
  override name = 'UsageInputError';
  /** `unknown_key` when the key id names no key; `bad_request` for everything else. */
  constructor(message: string, readonly code: 'bad_request' | 'unknown_key' = 'bad_request') {
    super(message);
  }
}

const MONTH = /^(\d{4})-(\d{2})$/;

/** Validates a `YYYY-MM` month (years 1970 to 9999); throws UsageInputError. */
export function parseMonth(text: string): string {
  const m = MONTH.exec(text);
  const year = m === null ? NaN : Number(m[1]);
  const month = m === null ? NaN : Number(m[2]);
  if (!(year >= 1970 && year <= 9999 && month >= 1 && month <= 12)) {
    throw new UsageInputError(`--month must be a UTC month as YYYY-MM, e.g. ${monthOf(Date.now())} (got "${text}")`);
  }
  return text;
}

/** First instant of `month` and of the month after it, epoch ms (UTC). */
export function monthBounds(month: string): { from: number; to: number } {
  const [y, m] = month.split('-').map(Number) as [number, number];
  return { from: Date.UTC(y, m - 1, 1), to: Date.UTC(y, m, 1) };
}

const KEY_ID = /^key_[A-Za-z0-9_-]{1,60}$/;

/** Validates the form of a key id before any store is asked; throws UsageInputError. */
export function parseKeyId(text: string): string {
  // Not echoed: what was typed may be a secret pasted in the wrong place.
  if (!KEY_ID.test(text)) throw new UsageInputError('unknown key id: a key id is key_ followed by 12 characters (see tintype keys list)', 'unknown_key');
  return text;
}

/** One group of the ledger's records for a key and month, as the store counts them. */
export interface LedgerTally {
  keyId: string;
  operation: string;
  status: number | null;
  error: string | null;
  cache: string | null;
  metered: boolean;
  outcome: 'settled' | 'unsettled';
  n: number;
}

/** What a reader takes from the store for one month, in one read transaction. */
export interface UsageSnapshot {
  /** Every key, or only the one asked for (empty when it does not exist). */
  keys: KeyRecord[];
  tallies: LedgerTally[];
  /** Calls counted against each key's quota this month (metered plus reserved in flight). */
  used: Array<{ keyId: string; used: number }>;
  /** Leases of the month not yet settled or expired, per key. */
  open: Array<{ keyId: string; n: number }>;
}

/** The figures of one key (or of all of them: the totals) for one month. */
export interface UsageFigures {
  /** Calls charged: 200 (hit or render), 502 and 504 answers (spec Part 7 "Billing"). */
  metered: number;
  /** Calls granted and not yet settled: they count against the quota until they are. */
  inFlight: number;
  /** Leases never settled, expired and recorded `unsettled`; not metered. */
  unsettled: number;
  /** Every ledger record of the month: settled answers and unsettled leases. */
  records: number;
  /** Metered calls per operation. */
  operations: Record<Operation, number>;
  /** 200 answers served from the cache. */
  hits: number;
  /** 200 answers rendered (cache miss). */
  renders: number;
  /** Settled answers per HTTP status, metered or not. */
  statuses: Record<string, number>;
  /** Settled answers per `error` code. */
  errors: Record<string, number>;
}

export interface KeyUsage extends UsageFigures {
  keyId: string;
  name: string;
  plan: string;
  createdAt: string;
  revokedAt: string | null;
  /** The monthly quota of the key's plan as the plans in force define it; null for a plan no longer defined. */
  monthlyQuota: number | null;
  /** Calls counted against the quota: metered plus in flight. */
  used: number;
  /** What is left of the quota this month (never below 0); null without a quota. */
  remaining: number | null;
}

export interface UsageReport {
  month: string;
  /** The month's first instant and the next month's, ISO 8601 UTC: the ledger counts a call in the month it was checked. */
  from: string;
  to: string;
  keys: KeyUsage[];
  totals: UsageFigures & { used: number };
}

export const OPERATION_NAMES = Object.keys(OPERATIONS) as Operation[];

function emptyFigures(): UsageFigures {
  return {
    metered: 0, inFlight: 0, unsettled: 0, records: 0,
    operations: Object.fromEntries(OPERATION_NAMES.map((o) => [o, 0])) as Record<Operation, number>,
    hits: 0, renders: 0, statuses: {}, errors: {},
  };
}

function add(into: Record<string, number>, key: string, n: number): void {
  into[key] = (into[key] ?? 0) + n;
}

/** Sorted copy of a count map, so the output is the same for the same ledger. */
function sorted(m: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(m).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** Which keys a report lists. */
export interface ReportKeys {
  /** Only this key. */
  keyId?: string;
  /** Every key in the store, whether it existed in the month or not (`tintype keys list`). */
  everyKey?: boolean;
}

/**
 * Folds a snapshot into the report. Keys listed: the one asked for, or every key that existed
 * during the month (created before its end, not revoked before its start) plus any key with
 * records, calls or leases in it.
 */
export function buildReport(month: string, snapshot: UsageSnapshot, plans: Plans, which: ReportKeys = {}): UsageReport {
  const onlyKey = which.keyId;
  const { from, to } = monthBounds(month);
  const figures = new Map<string, UsageFigures>();
  const of = (keyId: string): UsageFigures => {
    let f = figures.get(keyId);
    if (f === undefined) figures.set(keyId, (f = emptyFigures()));
    return f;
  };
  for (const t of snapshot.tallies) {
    const f = of(t.keyId);
    f.records += t.n;
    if (t.outcome === 'unsettled') {
      f.unsettled += t.n;
      continue;
    }
    if (t.metered) {
      f.metered += t.n;
      if (Object.hasOwn(f.operations, t.operation)) f.operations[t.operation as Operation] += t.n;
    }
    if (t.status === 200 && t.cache === 'hit') f.hits += t.n;
    if (t.status === 200 && t.cache === 'miss') f.renders += t.n;
    if (t.status !== null) add(f.statuses, String(t.status), t.n);
    if (t.error !== null) add(f.errors, t.error, t.n);
  }
  const used = new Map(snapshot.used.map((u) => [u.keyId, u.used]));
  for (const o of snapshot.open) of(o.keyId).inFlight += o.n;
  for (const keyId of used.keys()) of(keyId);

  const keys: KeyUsage[] = [];
  for (const k of snapshot.keys) {
    if (onlyKey !== undefined && k.id !== onlyKey) continue;
    const alive = k.createdAt < to && (k.revokedAt === null || k.revokedAt >= from);
    if (onlyKey === undefined && which.everyKey !== true && !alive && !figures.has(k.id)) continue;
    const f = figures.get(k.id) ?? emptyFigures();
    const quota = Object.hasOwn(plans, k.plan) ? plans[k.plan]!.monthlyQuota : null;
    const u = used.get(k.id) ?? f.metered + f.inFlight;
    keys.push({
      keyId: k.id, name: k.name, plan: k.plan,
      createdAt: new Date(k.createdAt).toISOString(),
      revokedAt: k.revokedAt === null ? null : new Date(k.revokedAt).toISOString(),
      monthlyQuota: quota, used: u, remaining: quota === null ? null : Math.max(0, quota - u),
      ...f, statuses: sorted(f.statuses), errors: sorted(f.errors),
    });
  }
  const totals = { ...emptyFigures(), used: 0 };
  for (const k of keys) {
    for (const n of ['metered', 'inFlight', 'unsettled', 'records', 'hits', 'renders', 'used'] as const) totals[n] += k[n];
    for (const o of OPERATION_NAMES) totals.operations[o] += k.operations[o];
    for (const [s, n] of Object.entries(k.statuses)) add(totals.statuses, s, n);
    for (const [e, n] of Object.entries(k.errors)) add(totals.errors, e, n);
  }
  totals.statuses = sorted(totals.statuses);
  totals.errors = sorted(totals.errors);
  return { month, from: new Date(from).toISOString(), to: new Date(to).toISOString(), keys, totals };
}
