/**
 * Reading a renderer's `/state` body (lib/state-contract.ts; README, "The operator"): what is a
 * report, what is not (the pod then counts as unreadable), and what a report without `busyMean`
 * (a renderer from before the field) reads as.
 */
import t from 'tap';
import { parseStateReport } from '../../lib/state-contract.ts';

const base = { slots: 2, busy: 1, guard: 'verified', draining: false };

const rows: Array<{ name: string; body: unknown; want: ReturnType<typeof parseStateReport> }> = [
  { name: 'a full report', body: { ...base, busyMean: 0.73 }, want: { slots: 2, busy: 1, busyMean: 0.73, guard: 'verified', draining: false } },
  { name: 'no busyMean reads as busy', body: base, want: { slots: 2, busy: 1, busyMean: 1, guard: 'verified', draining: false } },
  { name: 'busyMean 0 is a report', body: { ...base, busyMean: 0 }, want: { slots: 2, busy: 1, busyMean: 0, guard: 'verified', draining: false } },
  { name: 'busyMean at slots is kept', body: { ...base, busyMean: 2 }, want: { slots: 2, busy: 1, busyMean: 2, guard: 'verified', draining: false } },
  { name: 'busyMean past slots is cut to slots', body: { ...base, busyMean: 2.5 }, want: { slots: 2, busy: 1, busyMean: 2, guard: 'verified', draining: false } },
  { name: 'busy past slots is cut to slots, and so is the busyMean it stands for', body: { ...base, busy: 5 }, want: { slots: 2, busy: 2, busyMean: 2, guard: 'verified', draining: false } },
  { name: 'the sandbox on', body: { ...base, busyMean: 1, sandbox: true }, want: { slots: 2, busy: 1, busyMean: 1, guard: 'verified', draining: false, sandbox: true } },
  { name: 'the sandbox off', body: { ...base, busyMean: 1, sandbox: false }, want: { slots: 2, busy: 1, busyMean: 1, guard: 'verified', draining: false, sandbox: false } },
  { name: 'a sandbox that is not true or false is no report', body: { ...base, sandbox: 'on' }, want: undefined },
  { name: 'a negative busyMean is no report', body: { ...base, busyMean: -0.1 }, want: undefined },
  { name: 'a busyMean as a string is no report', body: { ...base, busyMean: '0.5' }, want: undefined },
  { name: 'a null busyMean is no report', body: { ...base, busyMean: null }, want: undefined },
  { name: 'a fractional busy is no report', body: { ...base, busy: 0.5 }, want: undefined },
  { name: 'an unknown guard is no report', body: { ...base, guard: 'maybe' }, want: undefined },
  { name: 'no draining is no report', body: { slots: 2, busy: 1, guard: 'verified' }, want: undefined },
  { name: 'not an object', body: 'busy', want: undefined },
];

for (const row of rows) {
  t.test(row.name, async (t) => {
    t.same(parseStateReport(row.body), row.want);
  });
}
