/**
 * `kill -9` under load, then a restart on the same state. Compared per key once every lease of
 * the killed process has expired (render budget + grace + the sweep):
 * every answer finished before the kill is in the ledger exactly once; only a request in flight
 * at the kill can be off: settled before its answer was sent, and the process died before the
 * client had it (metered, not received), or answered after its settle's wait ran out, before the
 * settle committed (lost). The window is inherent to metering at the answer (docs/operations.md "What it
 * survives").
 */
import { cleanup } from '../service.ts';
import { LOAD_ENV, loadKeys, startLoadService, within } from './fleet.ts';
import { startPostgres } from './instances.ts';
import { runLoad } from './load.ts';
import { meteredByKey, openLeases, type StoreAt } from './readings.ts';

export interface CrashFigures {
  acknowledged_metered: number;
  ledger_metered: number;
  /** Metered answers a client received that the ledger lacks. */
  lost: number;
  /** Metered records beyond the answers clients received (metered, never received). */
  double_counted: number;
  /** Requests sent and not yet answered when the process was killed. */
  in_flight_at_kill: number;
}

export async function killUnderLoad(o: { store: 'sqlite' | 'postgres'; keys: number; clients: number; killAfterMs: number; seed: number }): Promise<CrashFigures> {
  const pg = o.store === 'postgres' ? await startPostgres() : undefined;
  const env: Record<string, string> = pg === undefined ? {} : { DATABASE_URL: pg.url };
  let svc = await startLoadService({ env });
  try {
    const keys = await loadKeys(svc, o.keys);
    const load = runLoad({ port: svc.port, keys, clients: o.clients, durationMs: o.killAfterMs * 4, seed: o.seed, requestTimeoutMs: 30_000 });
    await new Promise((r) => setTimeout(r, o.killAfterMs));
    const inFlight = load.outstanding();
    await svc.signal('SIGKILL');
    load.stop();
    const received = (await load.done).meteredReceived;

    svc = await startLoadService({ env, dataDir: svc.dataDir });
    const store: StoreAt = pg === undefined ? { dataDir: svc.dataDir } : { databaseUrl: pg.url };
    const expiry = Number(LOAD_ENV.TINTYPE_RENDER_TIMEOUT_MS) + Number(LOAD_ENV.TINTYPE_LEASE_GRACE_MS) + 5_000;
    await within(expiry, async () => (await openLeases(store)) === 0);
    const ledger = await meteredByKey(store);

    let lost = 0;
    let doubled = 0;
    for (const k of keys) {
      const got = received.get(k.id) ?? 0;
      const held = ledger.get(k.id) ?? 0;
      lost += Math.max(0, got - held);
      doubled += Math.max(0, held - got);
    }
    const sum = (m: Map<string, number>): number => [...m.values()].reduce((a, b) => a + b, 0);
    return { acknowledged_metered: sum(received), ledger_metered: sum(ledger), lost, double_counted: doubled, in_flight_at_kill: inFlight };
  } finally {
    await svc.signal('SIGTERM');
    await pg?.destroy();
    cleanup();
  }
}
