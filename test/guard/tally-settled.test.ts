/**
 * A render's tally is read complete (docs/architecture.md §2 "guard"): a read of
 * `GET /renders/<token>` (and its in-process form) waits for that render's requests the guard is
 * still judging, here one whose name is still resolving when the read comes, so a refusal
 * recorded a moment later is not lost to the render. The wait is bounded.
 */
import t, { type Test } from 'tap';
import { renderAuthorization, renderStatsPath } from '../../lib/guard-contract.ts';
import { createLogger } from '../../lib/log.ts';
import { createGuard } from '../../guard/index.ts';
import { connectVia, viaGuard } from './helpers.ts';

const quiet = createLogger('guard-test', { level: 'error' });

/** A guard whose resolver answers `late.test` (a private address) only when told to. */
async function guardWithLateName(t: Test) {
  let asked!: () => void;
  const wasAsked = new Promise<void>((r) => (asked = r));
  let answer!: () => void;
  const answered = new Promise<void>((r) => (answer = r));
  const guard = createGuard({
    port: 0, host: '127.0.0.1', logger: quiet,
    resolve: async (name) => {
      if (name !== 'late.test') return ['93.184.215.14'];
      asked();
      await answered;
      return ['10.0.0.9'];
    },
  });
  await guard.start();
  t.teardown(() => guard.stop());
  return { guard, port: guard.address().port!, wasAsked, answer };
}

t.test('an absolute-form request still being judged when the tally is read over HTTP is counted', async (t) => {
  const { guard, port, wasAsked, answer } = await guardWithLateName(t);
  const token = guard.tokens.mint();
  const refused = viaGuard(guard.address(), 'http://late.test/', { headers: { 'proxy-authorization': renderAuthorization(token) } });
  await wasAsked;
  const read = viaGuard({ port }, renderStatsPath(token));
  // The verdict comes after the read was sent; the read waits for it.
  setTimeout(answer, 100);
  const tally = JSON.parse((await read).body);
  t.equal(tally.blocked, 1, 'the refusal judged after the read came is in it');
  t.equal(tally.firstReason, 'private_address');
  t.equal((await refused).status, 403);
});

t.test('a CONNECT still being judged when the tally is taken in process is counted', async (t) => {
  const { guard, port, wasAsked, answer } = await guardWithLateName(t);
  const token = guard.tokens.mint();
  const refused = connectVia(port, 'late.test:443', { 'proxy-authorization': renderAuthorization(token) });
  await wasAsked;
  const read = guard.settledTally(token);
  answer();
  t.match(await read, { blocked: 1, firstReason: 'private_address' });
  t.equal((await refused).status, 403);
  t.same(guard.takeTally(token), { blocked: 0, firstReason: null, refused: [] }, 'and it was forgotten');
});

t.test('a read waits at most its bound: a verdict that does not come leaves what is recorded', async (t) => {
  const { guard, port, wasAsked, answer } = await guardWithLateName(t);
  const token = guard.tokens.mint();
  const pending = viaGuard(guard.address(), 'http://late.test/', { headers: { 'proxy-authorization': renderAuthorization(token) } });
  await viaGuard({ port }, 'ftp://other.test/', { headers: { 'proxy-authorization': renderAuthorization(token) } });
  await wasAsked;
  const tally = JSON.parse((await viaGuard({ port }, renderStatsPath(token))).body);
  t.equal(tally.blocked, 1, 'the bad scheme recorded before; the name still resolving not waited for past the bound');
  answer();
  await pending;
});
