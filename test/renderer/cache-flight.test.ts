/**
 * renderer/cache/flight.ts localFlights: the first miss of a key leads, the others wait for its
 * end (or their own deadline, or their client's leaving), then ask the cache again; a flight
 * elsewhere that cannot be asked leaves each call to render by itself.
 */
import t from 'tap';
import { localFlights, type Flight } from '../../renderer/cache/flight.ts';

const open = (ms = 60_000) => ({ until: Date.now() + ms, signal: new AbortController().signal });
const settledWithin = async (p: Promise<Flight>, ms: number): Promise<Flight | 'pending'> =>
  Promise.race([p, new Promise<'pending'>((r) => setTimeout(() => r('pending'), ms))]);

t.test('the first leads; the others wait until it ends, then ask again', async (t) => {
  const flights = localFlights();
  const lead = await flights('k', open());
  t.equal(lead.lead, true);
  const waiting = [flights('k', open()), flights('k', open())];
  t.equal(await settledWithin(waiting[0]!, 100), 'pending', 'a follower waits while the lead renders');
  t.equal((await flights('other', open())).lead, true, 'another key is another flight');
  await lead.end();
  for (const w of await Promise.all(waiting)) t.equal(w.lead, false, 'followed: asks the cache again');
  t.equal((await flights('k', open())).lead, true, 'once ended, the next miss leads');
});

t.test('a follower stops waiting at its deadline or when its client leaves', async (t) => {
  const flights = localFlights();
  const lead = await flights('k', open());
  t.equal((await flights('k', open(50))).lead, false, 'deadline');
  const leaving = new AbortController();
  const w = flights('k', { until: Date.now() + 60_000, signal: leaving.signal });
  leaving.abort();
  t.equal((await w).lead, false, 'client gone');
  await lead.end();
});

t.test('a flight across renderers decides the lead; one that throws leaves each call alone', async (t) => {
  const followed = localFlights(async () => ({ lead: false, end: async () => {} }));
  t.equal((await followed('k', open())).lead, false, 'another renderer led it');
  t.equal((await followed('k', open())).lead, false, 'and nothing is left waiting here');
  let ended = 0;
  const leads = localFlights(async () => ({ lead: true, end: async () => void (ended += 1) }));
  const l = await leads('k', open());
  await l.end();
  t.equal(ended, 1, 'the lead ends the flight across renderers too');
  const broken = localFlights(async () => {
    throw new Error('Redis does not answer');
  });
  t.equal((await broken('k', open())).lead, true, 'renders by itself');
});
