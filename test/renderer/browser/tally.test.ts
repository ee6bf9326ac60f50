/**
 * The per-render refusal tally behind `x-render-blocked` (spec 2.1; docs/architecture.md §2 "guard"): each
 * lane relay names its render to the guard, so refused sub-resources are counted for the render
 * that asked for them only, also when renders run side by side, and nothing carries over to the
 * next render on the same lane.
 */
import t from 'tap';
import { html, inProcess, job, launchedPid, startGuard, startPool, startSite, until } from './helpers.ts';

/** A page with `n` images on refused addresses (distinct, so none is deduplicated) and one allowed. */
function pageWithRefused(n: number, prefix: string): string {
  const images = Array.from({ length: n }, (_, i) => `<img src="http://10.${prefix}.0.${i + 1}/i.png">`).join('');
  return `<!doctype html><body><img src="/ok.png">${images}</body>`;
}

const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);

for (const isolation of ['netns', 'pod'] as const) {
  t.test(`${isolation}: each render gets its own count`, async (t) => {
    const g = await startGuard(t);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const site = await startSite(t, {
      '/three': html(pageWithRefused(3, '1')),
      '/five': html(pageWithRefused(5, '2')),
      '/none': html('<!doctype html><body><img src="/ok.png"></body>'),
      '/ok.png': (_req, res) => res.writeHead(200, { 'content-type': 'image/png' }).end(PNG),
    });
    const pool = await startPool(t, inProcess(g), { config: { slots: 2, isolation } });
    let loaded = 0;
    const render = (path: string) =>
      pool.render(
        job(async (page) => {
          await page.goto(`${site.origin}${path}`, { waitUntil: 'load' });
          loaded += 1;
          // Both renders stay open until both loaded: their refusals overlap in time.
          if (loaded === 2) release();
          await gate;
          return path;
        }),
      );
    const [three, five] = await Promise.all([render('/three'), render('/five')]);
    t.match(three.tally, { blocked: 3, firstReason: 'private_address' }, 'three refused for the first render');
    t.match(five.tally, { blocked: 5, firstReason: 'private_address' }, 'five refused for the second');
    t.equal(site.hits('/ok.png') >= 1, true, 'the allowed image was fetched (and not counted)');

    for (let i = 0; i < 4; i += 1) {
      const clean = await pool.render(
        job(async (page) => {
          await page.goto(`${site.origin}/none`, { waitUntil: 'load' });
        }),
      );
      t.same(clean.tally, { blocked: 0, firstReason: null, refused: [] }, `a later render on a reused lane counts nothing (${i + 1})`);
    }

    const asked = await pool.render(
      job(async (page) => {
        await page.goto(`${site.origin}/three`, { waitUntil: 'load' });
      }),
    );
    t.equal(asked.tally.blocked, 3, 'the same page counts the same again');
  });
}

for (const isolation of ['netns', 'pod'] as const) {
  t.test(`${isolation}: a render in flight while its browser is replaced keeps its own count`, async (t) => {
    // The replacement prepares its lanes (each with the token of its next render) while the old
    // browser still renders: nothing it prepares may rename or cut the old render's lane.
    const g = await startGuard(t);
    const site = await startSite(t, {
      '/three': html(pageWithRefused(3, '4')),
      '/five': html(pageWithRefused(5, '5')),
      '/ok.png': (_req, res) => res.writeHead(200, { 'content-type': 'image/png' }).end(PNG),
    });
    const pool = await startPool(t, inProcess(g), { config: { slots: 2, isolation, recycleAfterRenders: 2 } });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let oldPid = 0;
    const first = pool.render(
      job(async (page) => {
        oldPid = launchedPid(page);
        await page.goto(`${site.origin}/three`, { waitUntil: 'load' });
        await gate;
        await page.setContent('<img src="http://10.6.0.1/a.png"><img src="http://10.6.0.2/b.png">', { waitUntil: 'load' });
      }),
    );
    await until(() => oldPid !== 0);
    // The second render on the old browser orders its replacement; renders go on until one lands
    // on the new browser (by then its lanes are being prepared, or are ready).
    let onNew: Awaited<ReturnType<typeof pool.render<number>>> | undefined;
    while (onNew === undefined) {
      const r = await pool.render(
        job(async (page) => {
          await page.goto(`${site.origin}/five`, { waitUntil: 'load' });
          return launchedPid(page);
        }),
      );
      t.match(r.tally, { blocked: 5, firstReason: 'private_address' }, 'a render beside it counts its own five');
      if (r.value !== oldPid) onNew = r;
    }
    await until(() => pool.stats().readyContexts >= 2);
    release();
    const done = await first;
    t.match(done.tally, { blocked: 5, firstReason: 'private_address' }, 'three before the replacement and two after, all its own');
  });
}

t.test('the running tally a render can read mid-way adds up to the final one', async (t) => {
  const g = await startGuard(t);
  const site = await startSite(t, { '/three': html(pageWithRefused(3, '3')) });
  const pool = await startPool(t, inProcess(g));
  const r = await pool.render({
    deadline: Date.now() + 15_000,
    run: async (ctx) => {
      const { tally } = ctx;
      const page = await ctx.page();
      await page.goto(`${site.origin}/three`, { waitUntil: 'load' });
      const mid = await tally();
      await page.setContent('<img src="http://192.168.7.7/x.png">', { waitUntil: 'load' });
      return mid.blocked;
    },
  });
  t.equal(r.value, 3, 'three after the first page');
  t.equal(r.tally.blocked, 4, 'four at the end');
});
