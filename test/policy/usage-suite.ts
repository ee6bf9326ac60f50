/**
 * `tintype usage`, `tintype keys list` and `GET /usage` on policy's admin port, against a
 * ledger written by the real policy (check, settle, expire) on a real store with a fake clock:
 * several keys, plans and months, every status, an unsettled lease, one in flight, calls checked
 * at 23:59:59 UTC and settled after midnight. Run once per backend by usage.sqlite.test.ts,
 * usage.postgres.test.ts and usage.redis.test.ts.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Test } from 'tap';
import { CommandLineError } from '../../bin/commands/command.ts';
import { usageCommand } from '../../bin/commands/usage.ts';
import { loadConfig } from '../../lib/config.ts';
import type { Operation } from '../../lib/policy-contract.ts';
import { createPolicy, type Policy } from '../../policy/authorize.ts';
import { monthOf } from '../../policy/calendar.ts';
import { createKey } from '../../policy/keys.ts';
import { BUILT_IN_PLANS, type Plans } from '../../policy/plans.ts';
import type { PolicyStore } from '../../policy/store/store.ts';
import { CSV_COLUMNS } from '../../policy/usage-format.ts';
import { openUsageReader, readUsage } from '../../policy/usage-reader.ts';
import type { UsageReport } from '../../policy/usage-report.ts';
import { request } from './http.ts';
import { runTintype, startPolicyProcess } from './process.ts';
import { type StoreHome, type StoreKind, fakeClock, storeHome } from './stores.ts';
import { ADMIN_SOCKET_NAME, METRICS_PATH, READY_PATH } from '../../lib/admin.ts';

/** The plans in force when the report is read: `legacy` is gone by then. */
const PLANS_DOC = {
  plans: {
    small: { monthlyQuota: 10, perMinute: 1000, concurrentRenders: 5 },
    tiny: { monthlyQuota: 1, perMinute: 1000, concurrentRenders: 1 },
  },
};
const PLANS: Plans = { ...BUILT_IN_PLANS, ...PLANS_DOC.plans };
const SEED_PLANS: Plans = { ...PLANS, legacy: { monthlyQuota: 50, perMinute: 1000, concurrentRenders: 1 } };
const TTL = 45_000;
/** For leases that must still be open when the real policy process sweeps with the real clock. */
const FOREVER = 100 * 365 * 24 * 3600 * 1000;

interface Outcome {
  status: number;
  error?: string;
  cache?: 'hit' | 'miss';
}

interface Seeded {
  home: StoreHome;
  store: PolicyStore;
  env: Record<string, string>;
  ids: Record<'A' | 'B' | 'C' | 'D' | 'E' | 'F', string>;
}

/** Writes the ledger through the real policy; see the header for what it holds. */
async function seed(t: Test, kind: StoreKind): Promise<Seeded> {
  const home = await storeHome(kind);
  const store = home.open();
  t.teardown(async () => {
    await store.close();
    await home.drop();
  });
  await store.migrate();
  const clock = fakeClock('2026-07-01T00:00:00Z');
  const policy = createPolicy({ store, plans: SEED_PLANS, clock: clock.now, leaseTtlMs: TTL });
  const lasting = createPolicy({ store, plans: SEED_PLANS, clock: clock.now, leaseTtlMs: FOREVER });
  const key = async (plan: string, at: string, name?: string) => {
    clock.set(at);
    const k = await createKey(store, SEED_PLANS, { plan, now: clock.now(), ...(name === undefined ? {} : { name }) });
    return k;
  };
  const A = await key('small', '2026-07-01T00:00:00Z', 'build bot, "nightly"');
  const B = await key('pro', '2026-07-01T00:00:01Z', 'site');
  const C = await key('free', '2026-07-01T00:00:02Z');
  const E = await key('legacy', '2026-07-01T00:00:03Z');
  const F = await key('tiny', '2026-07-01T00:00:04Z');
  const lease = async (p: Policy, secret: string, op: Operation): Promise<string> => {
    const d = await p.check(`Bearer ${secret}`, op);
    if (!d.allow) throw new Error(`${op} refused: ${JSON.stringify(d.error.answer().body)}`);
    return d.leaseId;
  };
  const call = async (secret: string, op: Operation, o: Outcome): Promise<void> => {
    const id = await lease(policy, secret, op);
    t.equal(await policy.settle({ lease: id, ...o }), 'settled');
  };

  // July: one call checked at its last second and settled in August counts in July.
  clock.set('2026-07-31T23:59:59Z');
  const july = await lease(policy, A.secret, 'ping');
  clock.set('2026-08-01T00:00:00.500Z');
  await policy.settle({ lease: july, status: 200 });

  // August, key A: every status the renderer settles.
  clock.set('2026-08-10T12:00:00Z');
  await call(A.secret, 'ping', { status: 200 });
  await call(A.secret, 'ping', { status: 200 });
  await call(A.secret, 'screenshot', { status: 200, cache: 'hit' });
  await call(A.secret, 'screenshot', { status: 200, cache: 'miss' });
  await call(A.secret, 'screenshot', { status: 200, cache: 'miss' });
  await call(A.secret, 'pdf', { status: 502, error: 'render_failed' });
  await call(A.secret, 'pdf', { status: 504, error: 'render_timeout' });
  await call(A.secret, 'og', { status: 502, error: 'render_too_large' });
  await call(A.secret, 'html-to-image', { status: 422, error: 'url_rejected' });
  await call(A.secret, 'html-to-image', { status: 499 });
  await call(A.secret, 'html-to-image', { status: 400 });
  await call(A.secret, 'pdf', { status: 503, error: 'busy' });
  await lease(policy, A.secret, 'screenshot'); // never settled
  clock.advance(3600_000);
  t.equal(await policy.expire(), 1, 'the unsettled lease expired');

  clock.set('2026-08-12T08:00:00Z');
  await call(B.secret, 'html-to-image', { status: 200, cache: 'miss' });
  await call(B.secret, 'og', { status: 200, cache: 'hit' });
  await call(B.secret, 'og', { status: 200, cache: 'hit' });
  clock.set('2026-08-15T08:00:00Z');
  await call(C.secret, 'screenshot', { status: 200, cache: 'hit' });
  clock.set('2026-08-16T08:00:00Z');
  await call(E.secret, 'ping', { status: 200 });
  clock.set('2026-08-17T08:00:00Z');
  await call(F.secret, 'ping', { status: 200 });
  t.equal((await policy.check(`Bearer ${F.secret}`, 'ping')).allow, false, 'F is over its quota: refused, nothing recorded');
  clock.set('2026-08-20T00:00:00Z');
  await store.revokeKey(C.id, clock.now());

  // The month boundary: checked at 23:59:59 UTC, settled after midnight, counted in August.
  clock.set('2026-08-31T23:59:30Z');
  await lease(lasting, B.secret, 'pdf'); // still in flight when the report is read
  clock.set('2026-08-31T23:59:59Z');
  const boundary = await lease(policy, A.secret, 'og');
  clock.set('2026-09-01T00:00:01Z');
  t.equal(await policy.settle({ lease: boundary, status: 200, cache: 'miss' }), 'settled');
  await call(A.secret, 'ping', { status: 200 });

  // September.
  clock.set('2026-09-02T00:00:00Z');
  await store.revokeKey(E.id, clock.now());
  const D = await key('starter', '2026-09-05T00:00:00Z');
  clock.set('2026-09-06T00:00:00Z');
  await call(D.secret, 'pdf', { status: 200, cache: 'miss' });
  await call(D.secret, 'pdf', { status: 502, error: 'render_failed' });

  // This month, for `keys list`, which shows the month the command runs in.
  clock.set(Date.now());
  await call(A.secret, 'screenshot', { status: 200, cache: 'hit' });
  await call(B.secret, 'ping', { status: 200 });
  await lease(lasting, B.secret, 'pdf');

  const plansFile = path.join(home.env.TINTYPE_DATA_DIR!, 'plans.json');
  writeFileSync(plansFile, JSON.stringify(PLANS_DOC));
  return { home, store, env: { ...home.env, TINTYPE_PLANS: plansFile }, ids: { A: A.id, B: B.id, C: C.id, D: D.id, E: E.id, F: F.id } };
}

const ops = (o: Partial<Record<Operation, number>>) => ({ ping: 0, screenshot: 0, 'html-to-image': 0, pdf: 0, og: 0, ...o });

/** What August must read, by hand from the seed above. */
function expectedAugust(ids: Seeded['ids']) {
  return {
    month: '2026-08',
    from: '2026-08-01T00:00:00.000Z',
    to: '2026-09-01T00:00:00.000Z',
    keys: [
      {
        keyId: ids.A, name: 'build bot, "nightly"', plan: 'small', revokedAt: null, monthlyQuota: 10, used: 9, remaining: 1,
        metered: 9, inFlight: 0, unsettled: 1, records: 12, operations: ops({ ping: 2, screenshot: 3, pdf: 2, og: 2 }),
        hits: 1, renders: 3, statuses: { 200: 6, 422: 1, 499: 1, 502: 2, 504: 1 },
        errors: { render_failed: 1, render_timeout: 1, render_too_large: 1, url_rejected: 1 },
      },
      {
        keyId: ids.B, name: 'site', plan: 'pro', revokedAt: null, monthlyQuota: 10_000, used: 4, remaining: 9_996,
        metered: 3, inFlight: 1, unsettled: 0, records: 3, operations: ops({ 'html-to-image': 1, og: 2 }),
        hits: 2, renders: 1, statuses: { 200: 3 }, errors: {},
      },
      {
        keyId: ids.C, name: '', plan: 'free', revokedAt: '2026-08-20T00:00:00.000Z', monthlyQuota: 100, used: 1, remaining: 99,
        metered: 1, inFlight: 0, unsettled: 0, records: 1, operations: ops({ screenshot: 1 }),
        hits: 1, renders: 0, statuses: { 200: 1 }, errors: {},
      },
      {
        keyId: ids.E, name: '', plan: 'legacy', revokedAt: '2026-09-02T00:00:00.000Z', monthlyQuota: null, used: 1, remaining: null,
        metered: 1, inFlight: 0, unsettled: 0, records: 1, operations: ops({ ping: 1 }),
        hits: 0, renders: 0, statuses: { 200: 1 }, errors: {},
      },
      {
        keyId: ids.F, name: '', plan: 'tiny', revokedAt: null, monthlyQuota: 1, used: 1, remaining: 0,
        metered: 1, inFlight: 0, unsettled: 0, records: 1, operations: ops({ ping: 1 }),
        hits: 0, renders: 0, statuses: { 200: 1 }, errors: {},
      },
    ],
    totals: {
      metered: 15, used: 16, inFlight: 1, unsettled: 1, records: 18, hits: 4, renders: 4,
      operations: ops({ ping: 4, screenshot: 4, 'html-to-image': 1, pdf: 2, og: 4 }),
      statuses: { 200: 12, 422: 1, 499: 1, 502: 2, 504: 1 },
      errors: { render_failed: 1, render_timeout: 1, render_too_large: 1, url_rejected: 1 },
    },
  };
}

/** RFC 4180 records: quoted fields may hold commas, doubled quotes and line breaks. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let i = 0;
  let quoted = false;
  while (i < text.length) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i += 2;
        continue;
      }
      if (c === '"') quoted = false;
      else field += c;
      i += 1;
      continue;
    }
    if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(field);
      field = '';
    } else if (c === '\r' && text[i + 1] === '\n') {
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
      i += 1;
    } else field += c;
    i += 1;
  }
  if (field !== '' || row.length > 0) throw new Error('the last record does not end with CRLF');
  return rows;
}

/** The CSV row a key must have, from its expected JSON figures. */
function csvRow(month: string, k: ReturnType<typeof expectedAugust>['keys'][number], createdAt: string): Record<string, string> {
  const st = k.statuses as Record<string, number>;
  const er = k.errors as Record<string, number>;
  return {
    month, key_id: k.keyId, name: k.name, plan: k.plan, created_at: createdAt, revoked_at: k.revokedAt ?? '',
    monthly_quota: String(k.monthlyQuota ?? ''), used: String(k.used), remaining: String(k.remaining ?? ''),
    metered: String(k.metered), in_flight: String(k.inFlight), unsettled: String(k.unsettled), records: String(k.records),
    metered_ping: String(k.operations.ping), metered_screenshot: String(k.operations.screenshot),
    metered_html_to_image: String(k.operations['html-to-image']), metered_pdf: String(k.operations.pdf), metered_og: String(k.operations.og),
    hits: String(k.hits), renders: String(k.renders),
    status_200: String(st['200'] ?? 0), status_422: String(st['422'] ?? 0), status_499: String(st['499'] ?? 0),
    status_502: String(st['502'] ?? 0), status_504: String(st['504'] ?? 0), status_other: '0',
    error_url_rejected: String(er.url_rejected ?? 0), error_render_failed: String(er.render_failed ?? 0),
    error_render_too_large: String(er.render_too_large ?? 0), error_render_timeout: String(er.render_timeout ?? 0), error_other: '0',
  };
}

export function usageSuite(t: Test, kind: StoreKind): void {
  // One ledger for every test here: they only read it (the writer's transaction rolls back).
  let s!: Seeded;
  t.before(async () => {
    s = await seed(t, kind);
  });

  t.test('a seeded ledger reads exactly in json, csv and table; keys list and the admin port agree', async (t) => {
    const want = expectedAugust(s.ids);
    const created = ['2026-07-01T00:00:00.000Z', '2026-07-01T00:00:01.000Z', '2026-07-01T00:00:02.000Z', '2026-07-01T00:00:03.000Z', '2026-07-01T00:00:04.000Z'];

    const json = await runTintype(['usage', '--month', '2026-08', '--format', 'json'], s.env);
    t.equal(json.code, 0, json.stderr);
    t.equal(json.stderr, '');
    const report = JSON.parse(json.stdout) as UsageReport;
    t.same(report, { ...want, keys: want.keys.map((k, i) => ({ ...k, createdAt: created[i] })) }, 'json: every figure of August');

    // What the metering recorded, read through the store's own interface.
    for (const k of report.keys) {
      const records = (await s.store.usage(k.keyId)).filter((r) => r.month === '2026-08');
      t.equal(k.records, records.length, `${k.keyId}: one ledger record per settled or expired lease`);
      t.equal(k.metered, records.filter((r) => r.metered).length, `${k.keyId}: metered as the ledger says`);
      t.equal(k.unsettled, records.filter((r) => r.outcome === 'unsettled').length);
      t.equal(k.used, await s.store.monthUsed(k.keyId, '2026-08'), `${k.keyId}: used as the quota check counts it`);
    }

    const csv = await runTintype(['usage', '--month', '2026-08', '--format', 'csv'], s.env);
    t.equal(csv.code, 0, csv.stderr);
    const rows = parseCsv(csv.stdout);
    t.same(rows[0], CSV_COLUMNS.map(([n]) => n), 'csv: the documented header row');
    t.same(rows[0]!.slice(0, 13), ['month', 'key_id', 'name', 'plan', 'created_at', 'revoked_at', 'monthly_quota', 'used', 'remaining', 'metered', 'in_flight', 'unsettled', 'records']);
    t.equal(rows.length, 1 + want.keys.length, 'csv: one row per key and month');
    want.keys.forEach((k, i) => {
      const got = Object.fromEntries(rows[0]!.map((n, j) => [n, rows[i + 1]![j]]));
      t.same(got, csvRow('2026-08', k, created[i]!), `csv: ${k.keyId}`);
    });
    t.match(csv.stdout, /,"build bot, ""nightly""",/, 'csv: a name with a comma and quotes is quoted, quotes doubled');

    const table = await runTintype(['usage', '--month', '2026-08'], s.env);
    t.equal(table.code, 0, table.stderr);
    const sections = table.stdout.split('\n\n');
    const words = (section: string, first: string) => section.split('\n').find((l) => l.startsWith(first + ' '))?.trim().split(/\s+/);
    t.match(sections[0], /^Usage for 2026-08 \(UTC/);
    t.same(words(sections[1]!, 'key'), ['key', 'name', 'plan', 'quota', 'used', 'remaining', 'metered', 'in', 'flight', 'unsettled']);
    t.same(words(sections[1]!, s.ids.A)?.slice(-6), ['10', '9', '1', '9', '0', '1'], 'table: A quota, used, remaining, metered, in flight, unsettled');
    t.same(words(sections[1]!, s.ids.E)?.slice(-6), ['-', '1', '-', '1', '0', '0'], 'table: a plan no longer defined has no quota');
    t.same(words(sections[1]!, 'total'), ['total', '16', '15', '1', '1']);
    t.same(words(sections[2]!, 'metered'), ['metered', 'calls', 'ping', 'screenshot', 'html-to-image', 'pdf', 'og', 'hits', 'renders']);
    t.same(words(sections[2]!, 'total'), ['total', '4', '4', '1', '2', '4', '4', '4']);
    t.same(words(sections[3]!, 'answers'), ['answers', '200', '422', '499', '502', '504', 'render_failed', 'render_timeout', 'render_too_large', 'url_rejected']);
    t.same(words(sections[3]!, s.ids.A), [s.ids.A, '6', '1', '1', '2', '1', '1', '1', '1', '1']);
    t.same(words(sections[3]!, 'total'), ['total', '12', '1', '1', '2', '1', '1', '1', '1', '1']);

    const list = await runTintype(['keys', 'list'], s.env);
    t.equal(list.code, 0, list.stderr);
    const listed = new Map(list.stdout.trim().split('\n').slice(1).map((l) => l.split('\t')).map((r) => [r[0], r]));

    // The admin socket: the same JSON; never the main port nor the admin port.
    // SQLite's store is in the data directory; with PostgreSQL, a directory of this test's own.
    const dataDir = s.env['TINTYPE_DATA_DIR'] ?? mkdtempSync(path.join(os.tmpdir(), 'tintype-usage-admin-'));
    if (s.env['TINTYPE_DATA_DIR'] === undefined) t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
    const proc = await startPolicyProcess({ ...s.env, TINTYPE_DATA_DIR: dataDir, TINTYPE_LOG_LEVEL: 'info' });
    t.teardown(() => proc.kill('SIGTERM'));
    t.not(proc.adminPort, proc.port);
    const socket = path.join(dataDir, ADMIN_SOCKET_NAME);
    const admin = await request(socket, 'GET', '/usage?month=2026-08');
    t.equal(admin.status, 200);
    t.match(admin.headers['content-type'], /^application\/json/);
    t.equal(admin.body, json.stdout, 'GET /usage?month=2026-08 answers what tintype usage --format json prints');
    const read = async (query: string): Promise<UsageReport> => {
      const r = await request(socket, 'GET', `/usage${query}`);
      t.equal(r.status, 200, query);
      return JSON.parse(r.body) as UsageReport;
    };
    const sept = await read('?month=2026-09');
    t.same(sept.keys.map((k) => [k.keyId, k.metered, k.used, k.remaining]), [
      [s.ids.A, 1, 1, 9], [s.ids.B, 0, 0, 10_000], [s.ids.E, 0, 0, null], [s.ids.F, 0, 0, 1], [s.ids.D, 2, 2, 1_998],
    ], 'september: the key revoked in August is gone, the one created in September is there, the call after midnight is here');
    t.same(sept.totals.statuses, { 200: 2, 502: 1 });
    t.same((await read('?month=2026-07')).totals.metered, 1, 'july: the call checked at 23:59:59 and settled after midnight');
    t.same((await read(`?month=2026-08&key=${s.ids.B}`)).keys, [{ ...want.keys[1], createdAt: created[1] }], 'key=: that key alone');

    // keys list: this month's figures, the same as the report of this month.
    const now = await read('');
    t.equal(now.month, monthOf(Date.now()), 'the default month is this UTC month');
    const byId = new Map(now.keys.map((k) => [k.keyId, k]));
    t.same(listed.get(s.ids.A)?.slice(5, 7), ['1', '9'], 'A: one call this month, 9 left');
    t.same(listed.get(s.ids.B)?.slice(5, 7), ['1', '9998'], 'B: one metered, one in flight');
    for (const [id, row] of listed) {
      const k = byId.get(id!);
      if (k === undefined) continue;
      t.same(row.slice(5, 7), [String(k.metered), String(k.remaining ?? '-')], `keys list and usage agree on ${id}`);
    }
    const adminOne = await request(socket, 'GET', `/usage?month=2026-08&key=${s.ids.B}`);
    t.same((JSON.parse(adminOne.body) as UsageReport).keys.map((k) => k.keyId), [s.ids.B]);
    t.equal((await request(proc.port, 'GET', '/usage?month=2026-08')).status, 404, 'not on the port Envoy and renderers reach');
    t.equal((await request(proc.adminPort, 'GET', '/usage?month=2026-08')).status, 404, 'nor on the admin port');
    const bad: Array<[string, number, string]> = [
      ['/usage?month=2026-13', 400, 'bad_request'],
      ['/usage?month=08-2026', 400, 'bad_request'],
      ['/usage?month=2026-08&format=csv', 400, 'bad_request'],
      ['/usage?key=key_nobodyatall', 404, 'not_found'],
    ];
    for (const [p, status, error] of bad) {
      const r = await request(socket, 'GET', p);
      t.equal(r.status, status, p);
      t.equal(JSON.parse(r.body).error, error, p);
    }
    t.equal((await request(socket, 'POST', '/usage', {}, '')).status, 405);
    t.equal((await request(proc.adminPort, 'GET', READY_PATH)).status, 200, 'probes on the admin port');
    t.match((await request(proc.adminPort, 'GET', METRICS_PATH)).body, /tintype_policy_checks_total/);
    await proc.kill('SIGTERM');
    t.notOk(proc.output().includes('sk_'), 'no secret in any line policy wrote');
  });

  t.test('bad input: one line on stderr, exit 2, nothing on stdout', async (t) => {
    // The program as operators run it: the exit status and every byte it writes.
    const rows: Array<[string, string[], RegExp]> = [
      ['month 13', ['--month', '2026-13'], /--month must be a UTC month as YYYY-MM/],
      ['unknown key', ['--key', 'key_nobodyatall'], /unknown key id "key_nobodyatall"/],
    ];
    for (const [name, args, message] of rows) {
      const r = await runTintype(['usage', ...args], s.env);
      t.equal(r.code, 2, name);
      t.equal(r.stdout, '', `${name}: nothing written`);
      t.match(r.stderr, message, name);
      t.match(r.stderr, /^tintype usage: [^\n]+\n$/, `${name}: one line`);
    }
    // The rest through the command itself, in this process: what bin/tintype turns into exit 2.
    const more: Array<[string, string[], RegExp]> = [
      ['not a key id', ['--key', 'sk_secretish'], /^unknown key id: a key id is key_/],
      ['unknown format', ['--format', 'xml'], /^--format must be one of table, csv, json/],
      ['unknown option', ['--months', '2026-08'], /^Unknown option '--months'/],
      ['missing value', ['--month'], /argument missing/],
      ['positional', ['2026-08'], /^Unexpected argument/],
    ];
    // They are refused before the store is opened: nothing could have been written.
    for (const [name, args, message] of more) {
      const err = await usageCommand.run(args).then(() => undefined, (e: unknown) => e as Error & { code?: string });
      t.ok(err instanceof CommandLineError || err?.code?.startsWith('ERR_PARSE_ARGS'), `${name}: a command-line error (exit 2)`);
      t.match(err?.message, message, name);
      t.notOk(err?.message.includes('secretish'), `${name}: a malformed key id is not echoed`);
    }
  });

  t.test('reads while a writer holds its locks', async (t) => {
    const release = await holdWriteLocks(s.home, s.ids.A);
    try {
      const reader = openUsageReader(loadConfig(s.env));
      const report = await readUsage(reader, PLANS, '2026-08', { keyId: s.ids.A });
      await reader.close();
      t.equal(report.keys[0]?.metered, 9, 'the report read past the open write transaction');
    } finally {
      await release();
    }
  });

  t.test('settles in parallel from two replicas are each counted once', async (t) => {
    // A store of its own: this one writes.
    const home = await storeHome(kind);
    const store = home.open();
    const replica = home.open();
    t.teardown(async () => {
      await store.close();
      await replica.close();
      await home.drop();
    });
    await store.migrate();
    const plans: Plans = { ...PLANS, wide: { monthlyQuota: 100_000, perMinute: 100_000, concurrentRenders: 1_000 } };
    const clock = fakeClock('2026-08-10T12:00:00Z');
    const policies = [store, replica].map((st) => createPolicy({ store: st, plans, clock: clock.now, leaseTtlMs: TTL }));
    const k = await createKey(store, plans, { plan: 'wide', now: clock.now() });
    const outcomes: Outcome[] = [{ status: 200 }, { status: 200 }, { status: 499 }, { status: 502, error: 'render_failed' }];
    // Waves no wider than a replica's connections (10 for PostgreSQL), each opened beforehand: a
    // wait for a connection has a check's budget, which a loaded machine can pass.
    for (const st of [store, replica]) {
      for (let i = 0; i < 20; i++) {
        const warm = await Promise.allSettled(Array.from({ length: 10 }, () => st.monthUsed(k.id, '2026-08')));
        if (warm.every((w) => w.status === 'fulfilled')) break;
      }
    }
    const leases: string[] = [];
    const settled: string[] = [];
    for (let wave = 0; wave < 10; wave++) {
      const ids = await Promise.all(Array.from({ length: 20 }, async (_, i) => {
        const d = await policies[i % 2]!.check(`Bearer ${k.secret}`, 'ping');
        if (!d.allow) throw new Error('refused');
        return d.leaseId;
      }));
      leases.push(...ids);
      // Every settle of a kind of record meets others of that kind from both replicas, the
      // first ones of each kind included.
      settled.push(...await Promise.all(ids.map((lease, i) => policies[i % 2]!.settle({ lease, ...outcomes[i % 4]! }))));
    }
    t.equal(settled.filter((r) => r === 'settled').length, 200);
    const reader = openUsageReader(loadConfig(home.env));
    const report = await readUsage(reader, plans, '2026-08', { keyId: k.id });
    await reader.close();
    const ledger = await store.usage(k.id);
    t.equal(ledger.length, 200, 'the ledger holds every settle');
    const byStatus: Record<string, number> = {};
    for (const u of ledger) byStatus[String(u.status)] = (byStatus[String(u.status)] ?? 0) + 1;
    t.same(report.keys[0]?.statuses, byStatus, 'the report counts what the ledger holds');
    t.same([report.totals.records, report.totals.metered, report.totals.errors], [200, 150, { render_failed: 50 }]);
  });
}

/**
 * Opens a write transaction on another connection, as a check does, and keeps it open: SQLite
 * holds the database's write lock, PostgreSQL the key's row locks.
 */
async function holdWriteLocks(home: StoreHome, keyId: string): Promise<() => Promise<void>> {
  if (home.kind === 'sqlite') {
    const { default: Database } = await import('../../policy/store/sqlite-driver.ts');
    const db = new Database(path.join(home.env.TINTYPE_DATA_DIR!, 'policy.sqlite'));
    db.exec('BEGIN IMMEDIATE');
    db.prepare('UPDATE usage_months SET used = used WHERE key_id = ?').run(keyId);
    return async () => {
      db.exec('ROLLBACK');
      db.close();
    };
  }
  const { default: pg } = await import('pg');
  const c = new pg.Client({ connectionString: home.env.DATABASE_URL });
  await c.connect();
  await c.query('BEGIN');
  await c.query('UPDATE key_state SET in_flight = in_flight WHERE key_id = $1', [keyId]);
  await c.query('UPDATE usage_months SET used = used WHERE key_id = $1', [keyId]);
  return async () => {
    await c.query('ROLLBACK');
    await c.end();
  };
}
