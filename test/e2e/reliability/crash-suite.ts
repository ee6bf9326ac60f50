/**
 * `kill -9` of `tintype start` under load, then a restart on the same state, on SQLite and on
 * PostgreSQL (an instance of its own): the ledger holds every metered answer a client received,
 * exactly once, and nothing more.
 */
import t from 'tap';
import { killUnderLoad } from './crash.ts';

/** Run by crash.sqlite.test.ts and crash.postgres.test.ts, each in its own process and time budget. */
export function crashTest(store: 'sqlite' | 'postgres'): void {
  t.test(`kill -9 under load loses and doubles nothing (${store})`, async (t) => {
    const f = await killUnderLoad({ store, keys: 3, clients: 12, killAfterMs: 6_000, seed: 11 });
    t.ok(f.acknowledged_metered > 0, `clients received metered answers before the kill (${f.acknowledged_metered})`);
    t.equal(f.lost, 0, 'no metered answer a client received is missing from the ledger');
    t.equal(f.double_counted, 0, 'nothing metered that no client received');
    t.equal(f.ledger_metered, f.acknowledged_metered, 'the totals agree');
  });
}
