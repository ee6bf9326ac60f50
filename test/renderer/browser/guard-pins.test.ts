/**
 * Which guard a render talks to (renderer/browser/guard-pins.ts; docs/architecture.md §2 "guard"):
 * a render keeps the guard its first use chose for every later use, renders take the name's
 * addresses in turn, the name is looked up at most once per LOOKUP_TTL_MS (a fake clock), and a
 * render forgotten, or a lookup that failed, chooses afresh. No network: the lookup is a seam.
 * Then pod isolation's relays (pinnedRelays): a render's requests reach its own guard, and its
 * choice lasts until its tally is read, no longer.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { pinnedRelays } from '../../../renderer/browser/pod-isolation.ts';
import { guardRoute, LOOKUP_TTL_MS, type GuardRoute } from '../../../renderer/browser/guard-pins.ts';
import type { GuardAddress } from '../../../renderer/browser/guard-endpoint.ts';

const PORT = 3128;
const TOKEN = (n: number): string => `render-token-${String(n).padStart(4, '0')}`;

/** A route to `guards.test` whose answers the test sets, with a clock it moves. */
function fixture(answers: string[] | Error) {
  const state = { answers, now: 0, lookups: 0 };
  const route = guardRoute(
    { host: 'guards.test', port: PORT },
    {
      lookup: async (host) => {
        state.lookups += 1;
        if (host !== 'guards.test') throw new Error(`asked for ${host}`);
        if (state.answers instanceof Error) throw state.answers;
        // As a cluster's DNS answers a headless Service: every address, in an order of its own.
        return [...state.answers].reverse();
      },
      now: () => state.now,
    },
  );
  return { state, route };
}

const host = async (route: GuardRoute, token: string): Promise<string> => ((await route.of(token)) as { host: string }).host;

t.test('every use of a render goes to the guard its first use chose; renders take the addresses in turn', async (t) => {
  const { route } = fixture(['10.0.0.2', '10.0.0.1', '10.0.0.3']);
  const first = await Promise.all([1, 2, 3, 4].map((n) => host(route, TOKEN(n))));
  t.same(first, ['10.0.0.1', '10.0.0.2', '10.0.0.3', '10.0.0.1'], 'in turn, in address order whatever order the resolver gave');
  const again = await Promise.all([4, 3, 2, 1, 1, 2].map((n) => host(route, TOKEN(n))));
  t.same(again, ['10.0.0.1', '10.0.0.3', '10.0.0.2', '10.0.0.1', '10.0.0.1', '10.0.0.2'], 'each render kept its own');
  t.same(await route.of(TOKEN(1)), { host: '10.0.0.1', port: PORT }, "GUARD_URL's port");
});

t.test('uses of one render that start together share one lookup and one choice', async (t) => {
  const { state, route } = fixture(['10.0.0.1', '10.0.0.2']);
  const at = await Promise.all(Array.from({ length: 20 }, () => host(route, TOKEN(1))));
  t.same(new Set(at).size, 1, 'one guard for all twenty');
  t.equal(state.lookups, 1, 'one lookup');
});

const ttlRows: Array<{ scenario: string; after: number; lookups: number }> = [
  { scenario: 'just after the lookup', after: 0, lookups: 1 },
  { scenario: 'LOOKUP_TTL_MS - 1 later', after: LOOKUP_TTL_MS - 1, lookups: 1 },
  { scenario: 'LOOKUP_TTL_MS later', after: LOOKUP_TTL_MS, lookups: 2 },
  { scenario: 'LOOKUP_TTL_MS + 1 later', after: LOOKUP_TTL_MS + 1, lookups: 2 },
];
for (const row of ttlRows) {
  t.test(`a new render ${row.scenario}: ${row.lookups} lookup(s)`, async (t) => {
    const { state, route } = fixture(['10.0.0.1']);
    await route.of(TOKEN(1));
    state.now += row.after;
    await route.of(TOKEN(2));
    t.equal(state.lookups, row.lookups);
  });
}

t.test('the Service changed: new renders go to the guards it has now; a render keeps the guard it chose', async (t) => {
  const { state, route } = fixture(['10.0.0.1', '10.0.0.2']);
  t.equal(await host(route, TOKEN(1)), '10.0.0.1');
  t.equal(await host(route, TOKEN(2)), '10.0.0.2');
  // 10.0.0.2 left (its pod is draining), 10.0.0.3 joined.
  state.answers = ['10.0.0.1', '10.0.0.3'];
  state.now += LOOKUP_TTL_MS;
  const later = await Promise.all([3, 4, 5, 6].map((n) => host(route, TOKEN(n))));
  t.same(new Set(later), new Set(['10.0.0.1', '10.0.0.3']), 'new renders: the guards there are now, both');
  t.equal(await host(route, TOKEN(2)), '10.0.0.2', 'a render in flight stays with its guard');
});

t.test('a lookup that fails chooses nothing: the render fails to reach a guard, and its next use looks up afresh', async (t) => {
  const { state, route } = fixture(new Error('getaddrinfo ENOTFOUND guards.test'));
  await t.rejects(route.of(TOKEN(1)), /ENOTFOUND/);
  t.equal(state.lookups, 1);
  state.answers = ['10.0.0.5'];
  t.equal(await host(route, TOKEN(1)), '10.0.0.5', 'no clock moved: a failed answer is not kept');
  t.equal(state.lookups, 2);
});

t.test('a name with no address is a failure, not a guard', async (t) => {
  const { route } = fixture([]);
  await t.rejects(route.of(TOKEN(1)), /no address/);
});

t.test('a render forgotten chooses afresh at its next use', async (t) => {
  const { route } = fixture(['10.0.0.1', '10.0.0.2']);
  t.equal(await host(route, TOKEN(1)), '10.0.0.1');
  route.forget(TOKEN(1));
  t.equal(await host(route, TOKEN(1)), '10.0.0.2');
});

t.test('a unix socket is every render\'s guard, and is never looked up', async (t) => {
  const route = guardRoute({ path: '/run/guard.sock' }, { lookup: async () => t.fail('looked up') as never });
  const at: GuardAddress[] = await Promise.all([route.of(TOKEN(1)), route.of(TOKEN(2))]);
  t.same(at, [{ path: '/run/guard.sock' }, { path: '/run/guard.sock' }]);
});

t.test("pod isolation's relays: a request goes to its render's guard; a render's choice is kept after its lane is cut (its tally is read then) and dropped at the lane's next render or the relays' close", async (t) => {
  // Two listeners stand for two guards: each answers a proxy request with its own name.
  const guards = await Promise.all(['first', 'second'].map(async (name) => {
    const server = http.createServer((_req, res) => res.writeHead(200, { 'x-guard': name, connection: 'close' }).end());
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    t.teardown(() => new Promise<void>((r) => server.close(() => r())));
    return { host: '127.0.0.1', port: (server.address() as AddressInfo).port };
  }));
  const pins = new Map<string, GuardAddress>();
  const forgotten: string[] = [];
  const route: GuardRoute = {
    of: async (token) => pins.get(token) ?? (pins.set(token, guards[pins.size % 2]!), pins.get(token)!),
    forget: (token) => void forgotten.push(token),
  };
  const relays = await pinnedRelays(1, route, 8);
  t.teardown(() => relays.close());
  const through = (): Promise<string> => new Promise((resolve, reject) => {
    const [host, port] = relays.laneAddresses[0]!.split(':');
    http.get({ host, port: Number(port), path: 'http://site.test/', agent: false }, (res) => {
      res.resume();
      resolve(String(res.headers['x-guard']));
    }).on('error', reject);
  });
  await relays.setToken(0, TOKEN(1));
  t.same([await through(), await through()], ['first', 'first'], "the first render's requests: its guard");
  await relays.setToken(0, undefined);
  t.same(forgotten, [], 'cut: the choice is kept for the tally read');
  await relays.setToken(0, TOKEN(2));
  t.same(forgotten, [TOKEN(1)], "the lane's next render: the first render's choice dropped");
  t.equal(await through(), 'second', "the next render's requests: its own guard");
  await relays.close();
  t.same(forgotten, [TOKEN(1), TOKEN(2)], "the relays' close: every choice dropped");
});
