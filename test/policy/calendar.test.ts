import t from 'tap';
import { monthOf, nextMonthStart, secondsToWindowEnd, windowStart } from '../../policy/calendar.ts';

t.test('fixed 60-second windows', async (t) => {
  const rows: Array<[string, string, number]> = [
    ['first instant', '2026-03-10T12:00:00.000Z', 60],
    ['one millisecond in', '2026-03-10T12:00:00.001Z', 60],
    ['last second', '2026-03-10T12:00:59.000Z', 1],
    ['last millisecond', '2026-03-10T12:00:59.999Z', 1],
  ];
  for (const [name, at, left] of rows) {
    t.equal(windowStart(Date.parse(at)), Date.parse('2026-03-10T12:00:00.000Z'), name);
    t.equal(secondsToWindowEnd(Date.parse(at)), left, `${name}: seconds left`);
  }
  t.equal(windowStart(Date.parse('2026-03-10T12:01:00.000Z')), Date.parse('2026-03-10T12:01:00.000Z'), 'next window');
});

t.test('UTC calendar months', async (t) => {
  const rows: Array<[string, string, string, string]> = [
    ['31 days, last second', '2026-01-31T23:59:59.999Z', '2026-01', '2026-02-01T00:00:00.000Z'],
    ['28 days, last second', '2026-02-28T23:59:59.000Z', '2026-02', '2026-03-01T00:00:00.000Z'],
    ['28 days, next instant', '2026-03-01T00:00:00.000Z', '2026-03', '2026-04-01T00:00:00.000Z'],
    ['29 days (leap)', '2028-02-29T23:59:59.000Z', '2028-02', '2028-03-01T00:00:00.000Z'],
    ['30 days, last second', '2026-04-30T23:59:59.000Z', '2026-04', '2026-05-01T00:00:00.000Z'],
    ['year end', '2026-12-31T23:59:59.000Z', '2026-12', '2027-01-01T00:00:00.000Z'],
    ['local midnight elsewhere is not UTC', '2026-05-31T23:30:00-02:00', '2026-06', '2026-07-01T00:00:00.000Z'],
  ];
  for (const [name, at, month, next] of rows) {
    t.equal(monthOf(Date.parse(at)), month, name);
    t.equal(nextMonthStart(Date.parse(at)), next, `${name}: resetsAt`);
  }
});
