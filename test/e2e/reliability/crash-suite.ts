/**
 * `kill -9` of `tintype start` under load, then a restart on the same state, on SQLite and on
 * PostgreSQL (an instance of its own): every metered answer a client received is in the ledger,
 * since a lease is settled before its answer is sent; the ledger holds more only by requests in
 * flight at the kill, settled but never received (crash.ts).
 */
import t from 'tap';
import { killUnderLoad } from './crash.ts';

/** Run by crash.sqlite.test.ts and crash.postgres.test.ts, each in its own process and time budget. */
export function crashTest(store: 'sqlite' | 'postgres'): void {
  t.test(`kill -9 under load: nothing received is lost; only requests in flight can be metered unreceived (${store})`, async (t) => {
    const f = await killUnderLoad({ store, keys: 3, clients: 12, killAfterMs: 6_000, seed: 11 });
    t.ok(f.acknowledged_metered > 0, `clients received metered answers before the kill (${f.acknowledged_metered})`);
    t.equal(f.lost, 0, 'every metered answer a client received is in the ledger');
    t.ok(
      f.double_counted <= f.in_flight_at_kill,
      `metered, never received: only among the requests in flight at the kill (${f.double_counted} of ${f.in_flight_at_kill})`,
    );
    t.equal(f.ledger_metered + f.lost - f.double_counted, f.acknowledged_metered, 'the totals agree');
  });
}
