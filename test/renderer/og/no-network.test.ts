import net from 'node:net';
import t from 'tap';
import { ServiceError } from '../../../lib/errors.ts';
import { createOgPool } from '../../../renderer/og/pool.ts';
import { galleryCards } from '../../../renderer/og/samples.ts';
import { installNetworkTrap } from './fixtures/network-trap.ts';

const TRAPPED = new URL('./fixtures/trapped-worker.ts', import.meta.url);

t.test('drawing every gallery card in this thread opens no socket and looks nothing up', async (t) => {
  const attempts: string[] = [];
  const restore = installNetworkTrap((what) => attempts.push(what));
  try {
    // Loaded under the trap: loading faces and emoji must not reach out either.
    const { drawCard, warmUp } = await import('../../../renderer/og/draw.ts');
    warmUp();
    for (const { card } of galleryCards()) drawCard(card);
    t.same(attempts, [], 'no network use');
    t.throws(() => net.connect(9, '127.0.0.1'), /used the network/, 'the trap is live: a connect is caught');
    t.same(attempts, ['net.Socket.connect']);
  } finally {
    restore();
  }
});

t.test('drawing threads open no socket: an attempt would end the thread and fail its card', async (t) => {
  const pool = createOgPool({ threads: 1, maxQueue: 1_000, entry: TRAPPED, drawTimeoutMs: 60_000 });
  await pool.start();
  t.teardown(() => pool.stop());
  const cards = galleryCards();
  const results = await Promise.allSettled(cards.map(({ card }) => pool.draw(card)));
  t.equal(results.filter((r) => r.status === 'fulfilled').length, cards.length, `all ${cards.length} cards drawn`);
  t.equal(pool.stats().replaced, 0, 'no thread ended');
  const dial = await pool.draw({ template: 'title', theme: 'dark', title: 'dial' }).then(() => 'ok', (e: unknown) => (e instanceof ServiceError ? e.code : String(e)));
  t.equal(dial, 'render_failed', 'the trap is live in the thread: a connect ends it');
  t.equal(pool.stats().replaced, 1);
});
