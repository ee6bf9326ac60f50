import t from 'tap';
import { ServiceError } from '../../../lib/errors.ts';
import { createOgDrawer } from '../../../renderer/og/index.ts';
import { createOgPool } from '../../../renderer/og/pool.ts';
import { decodePng } from '../../../renderer/og/typeset/png.ts';
import type { OgCard } from '../../../renderer/og/fields.ts';
import { Registry } from '../../../lib/metrics.ts';

const FAULTY = new URL('./fixtures/faulty-worker.ts', import.meta.url);
const BROKEN = new URL('./fixtures/broken-worker.ts', import.meta.url);

const card = (title: string): OgCard => ({ template: 'title', theme: 'dark', title });

// A replacement thread warms up (faces, grounds) before it takes cards; wait for it.
async function untilReady(pool: { stats(): { ready: number } }, want: number): Promise<void> {
  while (pool.stats().ready < want) await new Promise((r) => setTimeout(r, 20));
}

async function until(done: () => boolean): Promise<void> {
  while (!done()) await new Promise((r) => setTimeout(r, 20));
}

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'ok';
  } catch (err) {
    return err instanceof ServiceError ? err.code : `unexpected ${String(err)}`;
  }
}

t.test('the drawer parses, keys and draws 1200 x 630 PNGs on worker threads', async (t) => {
  const og = createOgDrawer({ threads: 2 });
  t.notOk(og.healthy(), 'not healthy before start');
  await og.start();
  t.teardown(() => og.stop());
  t.ok(og.healthy());
  t.match(og.stats(), { threads: 1, maxThreads: 2, ready: 1, busy: 0, queued: 0, replaced: 0 }, 'one warm thread; more as cards need them');
  const parsed = og.parse(new URLSearchParams('template=stat&title=Uptime&statValue=99.9%25&statLabel=last%2030%20days'));
  t.match(og.key(parsed), /^og:v\d+:[0-9a-f]{64}$/);
  const pngs = await Promise.all([parsed, card('one'), card('two'), card('three')].map((c) => og.draw(c)));
  for (const png of pngs) {
    const image = decodePng(png);
    t.equal(image.width, 1200);
    t.equal(image.height, 630);
  }
  t.not(Buffer.compare(pngs[1]!, pngs[2]!), 0, 'different cards, different pictures');
  t.equal(Buffer.compare(await og.draw(card('one')), pngs[1]!), 0, 'the same card draws the same bytes');
});

t.test('characters no face has are drawn as the empty box and counted by script (spec 4.5 rule 6)', async (t) => {
  const registry = new Registry();
  const og = createOgPool({ threads: 1, registry });
  await og.start();
  t.teardown(() => og.stop());
  await og.draw(card('Devanagari नमस्ते, Telugu తెలుగు, Khmer ខ្មែរ'));
  t.same(og.stats().missingGlyphs, {}, 'every script with a face: nothing counted');
  // CJK Extension B is above U+FFFF and in none of the faces.
  await og.draw(card('rare 𠀀𠀁 Han'));
  await og.draw(card('𠀂 once more'));
  t.same(og.stats().missingGlyphs, { Han: 3 }, 'three Han characters drawn as boxes');
  await og.draw(card('rare 𠀀𠀁 Han'));
  t.same(og.stats().missingGlyphs, { Han: 5 }, 'a text drawn again is counted again (shaped texts are kept)');
  t.match(registry.render(), /tintype_og_missing_glyphs_total\{script="Han"\} 5/, 'the metric by script');
});

// The growth tests give each card 8 s: the new thread warms up (faces, grounds, warm-up cards)
// before it draws, which on a loaded 2-core machine can take seconds.
t.test('a card that finds every thread busy starts one more, up to threads; an idle extra thread ends', async (t) => {
  const pool = createOgPool({ threads: 2, entry: FAULTY, drawTimeoutMs: 8_000, idleMs: 300 });
  await pool.start();
  t.teardown(() => pool.stop());
  t.match(pool.stats(), { threads: 1, ready: 1 });
  const stuck = pool.draw(card('hang'));
  const second = pool.draw(card('drawn by the second thread'));
  t.equal(pool.stats().threads, 2, 'a waiting card starts a second thread');
  const more = [pool.draw(card('c')), pool.draw(card('d'))];
  t.equal(pool.stats().threads, 2, 'never more than threads');
  t.equal(await codeOf(second), 'ok', 'the new thread warms up and draws while the first is stuck');
  for (const m of more) t.equal(await codeOf(m), 'ok');
  t.equal(await codeOf(stuck), 'render_timeout');
  // The stuck thread was ended; the second one is the minimum now and stays.
  await until(() => pool.stats().threads === 1 && pool.stats().ready === 1);
  t.equal(await codeOf(pool.draw(card('fine'))), 'ok');
});

t.test('an extra thread ends after idleMs; the minimum stays warm', async (t) => {
  const pool = createOgPool({ threads: 2, entry: FAULTY, drawTimeoutMs: 8_000, idleMs: 200 });
  await pool.start();
  t.teardown(() => pool.stop());
  const stuck = pool.draw(card('hang'));
  t.equal(await codeOf(pool.draw(card('grow'))), 'ok');
  t.equal(await codeOf(stuck), 'render_timeout');
  await until(() => pool.stats().threads === 1);
  const again = [pool.draw(card('e')), pool.draw(card('f')), pool.draw(card('g'))];
  t.equal(pool.stats().threads, 2, 'grows again when cards wait');
  for (const a of again) t.equal(await codeOf(a), 'ok');
  await until(() => pool.stats().threads === 1);
  t.ok(pool.healthy(), 'the minimum thread stays and is healthy');
  t.equal(await codeOf(pool.draw(card('after shrinking'))), 'ok');
});

t.test('with no queue, threads not yet started still take cards; one more is busy', async (t) => {
  const pool = createOgPool({ threads: 2, maxQueue: 0, entry: FAULTY, drawTimeoutMs: 8_000 });
  await pool.start();
  t.teardown(() => pool.stop());
  const stuck = pool.draw(card('hang'));
  const second = pool.draw(card('b'));
  t.equal(await codeOf(pool.draw(card('one too many'))), 'busy');
  t.equal(await codeOf(second), 'ok');
  t.equal(await codeOf(stuck), 'render_timeout');
});

t.test('a crashed thread answers its card 502 and is replaced', async (t) => {
  const pool = createOgPool({ threads: 1, entry: FAULTY });
  await pool.start();
  t.teardown(() => pool.stop());
  t.equal(await codeOf(pool.draw(card('crash'))), 'render_failed');
  await untilReady(pool, 1);
  t.equal(await codeOf(pool.draw(card('after the crash'))), 'ok', 'the next card is drawn by the replacement');
  t.equal(pool.stats().replaced, 1);
  t.ok(pool.healthy());
});

t.test('a card that throws answers 502; the thread keeps serving', async (t) => {
  const pool = createOgPool({ threads: 1, entry: FAULTY });
  await pool.start();
  t.teardown(() => pool.stop());
  t.equal(await codeOf(pool.draw(card('throw'))), 'render_failed');
  t.equal(await codeOf(pool.draw(card('fine'))), 'ok');
  t.equal(pool.stats().replaced, 0);
});

t.test('a hung thread answers 504 within the card time limit and is replaced', async (t) => {
  const pool = createOgPool({ threads: 1, entry: FAULTY, drawTimeoutMs: 1_500 });
  await pool.start();
  t.teardown(() => pool.stop());
  t.equal(await codeOf(pool.draw(card('hang'))), 'render_timeout');
  await untilReady(pool, 1);
  t.equal(await codeOf(pool.draw(card('fine'))), 'ok', 'a fresh thread draws the next card');
  t.equal(pool.stats().replaced, 1);
});

t.test('the queue is bounded: one card more is 503 busy at once', async (t) => {
  const pool = createOgPool({ threads: 1, maxQueue: 2, entry: FAULTY, drawTimeoutMs: 2_000 });
  await pool.start();
  t.teardown(() => pool.stop());
  const stuck = pool.draw(card('hang'));
  const waiting = [pool.draw(card('a')), pool.draw(card('b'))];
  t.match(pool.stats(), { busy: 1, queued: 2 });
  t.equal(await codeOf(pool.draw(card('one too many'))), 'busy');
  t.equal(await codeOf(stuck), 'render_timeout');
  // The queued cards keep their own time limit, counted from arrival (waiting included).
  for (const w of waiting) t.ok(['ok', 'render_timeout'].includes(await codeOf(w)));
});

t.test('an aborted card leaves the queue', async (t) => {
  const pool = createOgPool({ threads: 1, maxQueue: 1, entry: FAULTY, drawTimeoutMs: 2_000 });
  await pool.start();
  t.teardown(() => pool.stop());
  const stuck = pool.draw(card('hang'));
  const client = new AbortController();
  const waiting = pool.draw(card('a'), client.signal);
  t.equal(pool.stats().queued, 1);
  client.abort();
  t.equal(await codeOf(waiting), 'render_failed');
  t.equal(pool.stats().queued, 0, 'its place is free');
  const next = pool.draw(card('b'));
  t.equal(pool.stats().queued, 1, 'the freed place takes another card');
  t.equal(await codeOf(stuck), 'render_timeout');
  // Accepted, not refused: drawn, or out of time while the stuck thread was being replaced.
  t.ok(['ok', 'render_timeout'].includes(await codeOf(next)));
  const gone = new AbortController();
  gone.abort();
  t.equal(await codeOf(pool.draw(card('c'), gone.signal)), 'render_failed', 'an already aborted card is not drawn');
});

t.test('stop answers waiting cards busy, finishes the drawing one, refuses new ones', async (t) => {
  const pool = createOgPool({ threads: 1, maxQueue: 4 });
  await pool.start();
  const drawing = pool.draw(card('first'));
  const waiting = pool.draw(card('second'));
  await pool.stop();
  t.equal(await codeOf(drawing), 'ok');
  t.equal(await codeOf(waiting), 'busy');
  t.equal(await codeOf(pool.draw(card('late'))), 'busy');
  t.notOk(pool.healthy());
  t.match(pool.stats(), { threads: 0, queued: 0 });
});

t.test('a thread that cannot set up fails start', async (t) => {
  const pool = createOgPool({ threads: 2, entry: BROKEN });
  await t.rejects(pool.start(), /exited before it was ready: set-up failed/, 'the reason is given');
  t.notOk(pool.healthy());
  t.equal(pool.stats().threads, 0);
});

t.test('settings are checked', async (t) => {
  t.throws(() => createOgPool({ threads: 0 }), RangeError);
  t.throws(() => createOgPool({ maxQueue: -1 }), RangeError);
  t.throws(() => createOgPool({ minThreads: 0 }), RangeError);
});
