/**
 * What `tintype start` survives, as figures from a run (docs/operations.md "What it survives"): sustained
 * load, kill -9 under load on SQLite and PostgreSQL, Chromium killed, hostile pages, fuzzed
 * bodies, and PostgreSQL, Redis and the disk lost. The invariants are asserted by the tests in
 * test/e2e/reliability/ with short runs; this prints the figures of a long one. The disk-full
 * scenario mounts a tmpfs, so the bench runs as root.
 *
 * `npm run bench -- soak [--clients 200] [--seconds 60] [--fuzz 10000] [--phase-seconds 10] [--seed N]`
 */
import { parseArgs } from 'node:util';
import { killBrowser } from '../test/e2e/reliability/browser-killed.ts';
import { killUnderLoad } from '../test/e2e/reliability/crash.ts';
import { dependenciesLost } from '../test/e2e/reliability/dependencies.ts';
import { fuzzBodies } from '../test/e2e/reliability/fuzz.ts';
import { hostilePages } from '../test/e2e/reliability/hostile.ts';
import { sustainedLoad } from '../test/e2e/reliability/sustained.ts';
import { printMachine } from './machine.ts';

const { values: opts } = parseArgs({
  args: process.argv.slice(3),
  options: {
    clients: { type: 'string', default: '200' },
    seconds: { type: 'string', default: '60' },
    fuzz: { type: 'string', default: '10000' },
    'phase-seconds': { type: 'string', default: '10' },
    seed: { type: 'string', default: String(Date.now() % 100_000) },
  },
});
const CLIENTS = Number(opts.clients);
const SECONDS = Number(opts.seconds);
const SEED = Number(opts.seed);
const PHASE_MS = Number(opts['phase-seconds']) * 1000;

printMachine();
console.log(`soak: ${CLIENTS} clients for ${SECONDS} s, ${opts.fuzz} fuzzed bodies, dependency phases of ${PHASE_MS / 1000} s, seed ${SEED}`);

const sustained = await sustainedLoad({ clients: CLIENTS, durationMs: SECONDS * 1000, seed: SEED });
console.log(`sustained load: ${sustained.requests} requests, ${JSON.stringify(sustained.answers_by_status)}; unexpected 5xx ${sustained.unexpected_5xx}; RSS ${sustained.rss_mb_start} → ${sustained.rss_mb_end} MB; leaked slots ${sustained.leaked_slots}, leases ${sustained.leaked_leases}; ext_authz checks given up ${sustained.authz_errors}, leases expired unsettled ${sustained.unsettled_leases}`);

const killAfterMs = Math.max(3_000, (SECONDS * 1000) / 4);
const crashSqlite = await killUnderLoad({ store: 'sqlite', keys: 10, clients: Math.min(CLIENTS, 50), killAfterMs, seed: SEED });
console.log(`kill -9, SQLite: ${crashSqlite.acknowledged_metered} metered answers received, ${crashSqlite.ledger_metered} in the ledger; lost ${crashSqlite.lost} (of ${crashSqlite.in_flight_at_kill} in flight at the kill), double counted ${crashSqlite.double_counted}`);
const crashPostgres = await killUnderLoad({ store: 'postgres', keys: 10, clients: Math.min(CLIENTS, 50), killAfterMs, seed: SEED });
console.log(`kill -9, PostgreSQL: ${crashPostgres.acknowledged_metered} metered answers received, ${crashPostgres.ledger_metered} in the ledger; lost ${crashPostgres.lost} (of ${crashPostgres.in_flight_at_kill} in flight at the kill), double counted ${crashPostgres.double_counted}`);

const browser = await killBrowser();
console.log(`Chromium killed: ${browser.in_flight_502}/${browser.in_flight} in-flight renders 502 within ${browser.in_flight_answer_ms} ms; served again after ${browser.recovery_ms} ms; zombies ${browser.zombies}`);

const hostile = await hostilePages();
for (const r of hostile.hostile_results) console.log(`hostile page, ${r.name}: ${r.status}${r.error ? ` ${r.error}` : ''}; beside ${r.beside}, after ${r.after}`);

const fuzz = await fuzzBodies({ bodies: Number(opts.fuzz), seed: SEED });
console.log(`fuzzed bodies: ${fuzz.fuzzed_bodies}, ${JSON.stringify(fuzz.fuzzed_statuses)}; 5xx ${fuzz.fuzzed_5xx}; renders after: ${fuzz.renders_after}`);

const deps = await dependenciesLost({ clients: Math.min(CLIENTS, 20), phaseMs: PHASE_MS, seed: SEED });
console.log(`PostgreSQL lost: 5xx other than busy ${deps.pg_outage_5xx_other}, metered not received ${deps.pg_outage_double_counted} (of ${deps.pg_outage_in_flight} in flight), served again ${deps.recovery_ms} ms after its restart; Redis lost: ${deps.redis_outage_failed} renders failed; disk full: ${deps.disk_full_failed} renders failed`);

console.log(JSON.stringify({
  bench: 'soak',
  seed: SEED,
  requests: sustained.requests,
  answers_by_status: sustained.answers_by_status,
  unexpected_5xx: sustained.unexpected_5xx,
  rss_mb_start: sustained.rss_mb_start,
  rss_mb_end: sustained.rss_mb_end,
  leaked_slots: sustained.leaked_slots,
  leaked_leases: sustained.leaked_leases,
  authz_errors: sustained.authz_errors,
  unsettled_leases: sustained.unsettled_leases,
  acknowledged_metered: crashSqlite.acknowledged_metered,
  ledger_metered: crashSqlite.ledger_metered,
  lost: crashSqlite.lost,
  double_counted: crashSqlite.double_counted,
  in_flight_at_kill: crashSqlite.in_flight_at_kill,
  postgres_acknowledged_metered: crashPostgres.acknowledged_metered,
  postgres_ledger_metered: crashPostgres.ledger_metered,
  postgres_lost: crashPostgres.lost,
  postgres_double_counted: crashPostgres.double_counted,
  postgres_in_flight_at_kill: crashPostgres.in_flight_at_kill,
  in_flight_502: browser.in_flight_502,
  in_flight: browser.in_flight,
  browser_recovery_ms: browser.recovery_ms,
  zombies: browser.zombies,
  hostile_pages: hostile.hostile_pages,
  hostile_pages_ok: hostile.hostile_pages_ok,
  fuzzed_bodies: fuzz.fuzzed_bodies,
  fuzzed_5xx: fuzz.fuzzed_5xx,
  pg_outage_5xx_other: deps.pg_outage_5xx_other,
  pg_outage_double_counted: deps.pg_outage_double_counted,
  pg_outage_in_flight: deps.pg_outage_in_flight,
  redis_outage_failed: deps.redis_outage_failed,
  disk_full_failed: deps.disk_full_failed,
  recovery_ms: deps.recovery_ms,
}));
