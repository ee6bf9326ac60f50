/**
 * `kill -9` of `tintype start` under load, then a restart on the same state, on SQLite and on
 * PostgreSQL (an instance of its own): the ledger and what clients received differ only by
 * requests in flight at the kill (crash.ts).
 */
import t from 'tap';
import { killUnderLoad } from './crash.ts';

/** Run by crash.sqlite.test.ts and crash.postgres.test.ts, each in its own process and time budget. */
export function crashTest(store: 'sqlite' | 'postgres'): void {
  t.test(`kill -9 under load: the ledger is off only by requests in flight (${store})`, async (t) => {
    const f = await killUnderLoad({ store, keys: 3, clients: 12, killAfterMs: 6_000, seed: 11 });
    t.ok(f.acknowledged_metered > 0, `clients received metered answers before the kill (${f.acknowledged_metered})`);
    t.ok(
      f.lost + f.double_counted <= f.in_flight_at_kill,
      `off only among the requests in flight at the kill (lost ${f.lost}, metered not received ${f.double_counted}, in flight ${f.in_flight_at_kill})`,
    );
    t.equal(f.ledger_metered + f.lost - f.double_counted, f.acknowledged_metered, 'the totals agree');
  });
}
