/**
 * The busy count averaged over time (renderer/browser/busy-window.ts), `/state`'s busyMean
 * (docs/helm.md, "Scaling with the operator"), on a fake clock: a window of 5,000 ms.
 */
import t from 'tap';
import { BusyWindow } from '../../../renderer/browser/busy-window.ts';

const W = 5_000;

/** A window started at 0 with `changes` applied as [at, busy]. */
function windowOf(changes: Array<[number, number]>): BusyWindow {
  const w = new BusyWindow(W, 0);
  for (const [at, busy] of changes) w.set(busy, at);
  return w;
}

const rows: Array<{ name: string; changes: Array<[number, number]>; at: number; mean: number }> = [
  { name: 'never busy', changes: [], at: 10_000, mean: 0 },
  { name: 'at the very start: the count itself', changes: [[0, 2]], at: 0, mean: 2 },
  { name: 'busy since the start, shorter than the window: the mean since the start', changes: [[1_000, 1]], at: 2_000, mean: 0.5 },
  { name: 'one slot busy the whole window', changes: [[0, 1]], at: 7_000, mean: 1 },
  { name: 'two slots for 1 s of the window', changes: [[8_000, 2], [9_000, 0]], at: 10_000, mean: 0.4 },
  { name: 'a render that ended before the window counts nothing', changes: [[1_000, 1], [4_999, 0]], at: 10_000, mean: 0 },
  { name: 'a render that began before the window counts from its start (limit - 1 ms)', changes: [[4_999, 1]], at: 10_000, mean: 1 },
  { name: 'a render that began at the window start', changes: [[5_000, 1]], at: 10_000, mean: 1 },
  { name: 'a render that began 1 ms into the window', changes: [[5_001, 1]], at: 10_000, mean: 4_999 / 5_000 },
  { name: 'steps up and down inside the window', changes: [[6_000, 1], [7_000, 2], [8_000, 1], [9_000, 0]], at: 10_000, mean: (1 + 2 + 1) / 5 },
  { name: 'two changes at the same moment: the last one holds', changes: [[6_000, 1], [6_000, 2]], at: 10_000, mean: (2 * 4) / 5 },
];

for (const row of rows) {
  t.test(row.name, async (t) => {
    t.equal(windowOf(row.changes).mean(row.at), row.mean);
  });
}

t.test('the window slides: old changes are forgotten, the count at its start is kept', async (t) => {
  const w = new BusyWindow(W, 0);
  w.set(2, 1_000);
  w.set(1, 2_000);
  t.equal(w.mean(6_000), (2 * 1 + 1 * 4) / 5, 'two slots for 1 s, then one');
  t.equal(w.mean(7_000), 1, 'the two-slot second has left the window');
  w.set(0, 8_000);
  t.equal(w.mean(10_000), 3 / 5, 'one slot until 8 s, then none');
  t.equal(w.mean(20_000), 0, 'long idle');
  w.set(1, 20_000);
  t.equal(w.mean(22_500), 0.5, 'busy again for half the window');
});
