/**
 * Slots (spec Part 1 rule 5, Part 7 `busy`): TINTYPE_SLOTS renders at once,
 * the next one refused with `busy` at once (no hidden queue); a fresh context and page per
 * render, closed after it, so no cookie, storage, HTTP cache or service worker survives; a
 * client that goes away frees its slot at once.
 */
import type { Page } from 'puppeteer-core';
import t from 'tap';
import { ServiceError } from '../../../lib/errors.ts';
import { html, inProcess, job, startGuard, startPool, startSite, until } from './helpers.ts';

const SET_STATE = `<!doctype html><script src="/cached.js"></script><script>
window.__set = (async () => {
  document.cookie = 'crumb=1; max-age=3600; path=/';
  localStorage.setItem('k', 'v');
  sessionStorage.setItem('s', 'v');
  await new Promise((resolve, reject) => {
    const open = indexedDB.open('db', 1);
    open.onupgradeneeded = () => open.result.createObjectStore('s');
    open.onerror = () => reject(open.error);
    open.onsuccess = () => {
      const tx = open.result.transaction('s', 'readwrite');
      tx.objectStore('s').put('v', 'k');
      tx.oncomplete = () => { open.result.close(); resolve(); };
    };
  });
  await navigator.serviceWorker.register('/sw.js');
  await navigator.serviceWorker.ready;
  // The worker controls pages loaded after it is ready: prove it answers in this context.
  const frame = document.createElement('iframe');
  frame.src = '/blank';
  await new Promise((r) => { frame.onload = r; document.body.append(frame); });
  await fetch('/cached.js');
  return 'set';
})().catch((e) => 'failed: ' + e);
</script><body></body>`;

const SERVICE_WORKER = `self.addEventListener('install', () => self.skipWaiting());
self.addEventListener('activate', (e) => e.waitUntil(self.clients.claim()));
self.addEventListener('fetch', (e) => {
  if (new URL(e.request.url).pathname === '/probe') e.respondWith(new Response('from-worker'));
});`;

/** What a page of the site's origin can see of earlier renders. */
const READ_STATE = `(async () => ({
  cookie: document.cookie,
  local: localStorage.getItem('k'),
  session: sessionStorage.getItem('s'),
  databases: (await indexedDB.databases()).map((d) => d.name),
  workers: (await navigator.serviceWorker.getRegistrations()).length,
  probe: await fetch('/probe').then((r) => r.text()),
}))()`;

t.test('nothing set by one render is seen by the next', async (t) => {
  const g = await startGuard(t);
  const cookiesAtCheck: Array<string | undefined> = [];
  const site = await startSite(t, {
    '/set': html(SET_STATE),
    '/check': (req, res) => {
      cookiesAtCheck.push(req.headers.cookie);
      html('<!doctype html><script src="/cached.js"></script><body>check</body>')(req, res);
    },
    '/blank': html('<!doctype html><body></body>'),
    '/probe': (_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('from-site'),
    '/sw.js': (_req, res) => res.writeHead(200, { 'content-type': 'text/javascript' }).end(SERVICE_WORKER),
    '/cached.js': (_req, res) =>
      res.writeHead(200, { 'content-type': 'text/javascript', 'cache-control': 'public, max-age=3600' }).end('window.__cached = 1;'),
  });
  // One slot: every render reuses the same lanes, the worst case for leftovers.
  const pool = await startPool(t, inProcess(g));
  const pages: Page[] = [];

  const set = await pool.render(
    job(async (page) => {
      pages.push(page);
      await page.goto(`${site.origin}/set`, { waitUntil: 'load' });
      const outcome = await page.evaluate('window.__set');
      return { outcome, state: await page.evaluate(READ_STATE) };
    }),
  );
  t.equal(set.value.outcome, 'set', 'the first render stored everything');
  t.same(
    set.value.state,
    { cookie: 'crumb=1', local: 'v', session: 'v', databases: ['db'], workers: 1, probe: 'from-worker' },
    'and could read it back in its own context',
  );
  t.equal(site.hits('/cached.js'), 1, 'the script was cached within that render');

  for (let i = 1; i <= 4; i += 1) {
    const r = await pool.render(
      job(async (page) => {
        pages.push(page);
        await page.goto(`${site.origin}/check`, { waitUntil: 'load' });
        return page.evaluate(READ_STATE);
      }),
    );
    t.same(
      r.value,
      { cookie: '', local: null, session: null, databases: [], workers: 0, probe: 'from-site' },
      `render ${i + 1} sees no cookie, storage, database or service worker`,
    );
    t.equal(site.hits('/cached.js'), 1 + i, `render ${i + 1} fetched the script afresh (no HTTP cache survived)`);
  }
  t.same(cookiesAtCheck, [undefined, undefined, undefined, undefined], 'no later render sent the cookie');
  t.equal(new Set(pages).size, pages.length, 'every render had a page of its own');
  await until(() => pages.every((p) => p.isClosed()));
  t.pass('every render’s page was closed after it');
  const contexts = new Set(pages.map((p) => p.browserContext()));
  t.equal(contexts.size, pages.length, 'every render had a browser context of its own');

  const dialogs = await pool.render(
    job(async (page) => {
      await page.setContent('<script>alert(1); window.answer = confirm("?"); prompt("?");</script><p>after</p>', {
        waitUntil: 'load',
      });
      return page.evaluate('[window.answer, document.body.innerText]');
    }),
  );
  t.same(dialogs.value, [false, 'after'], 'alert, confirm and prompt are dismissed; the page goes on');
});

t.test('all slots taken: busy at once, no queue; a freed slot takes renders again', async (t) => {
  const g = await startGuard(t);
  const pool = await startPool(t, inProcess(g), { config: { slots: 2 } });
  t.equal(pool.stats().slots, 2);
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let started = 0;
  const held = [1, 2].map(() =>
    pool.render(
      job(async () => {
        started += 1;
        await gate;
        return 'done';
      }),
    ),
  );
  await until(() => started === 2);
  t.equal(pool.stats().busy, 2, 'both slots are busy');
  const third = await pool.render(job(async () => 'third')).then(
    () => undefined,
    (err: unknown) => err,
  );
  t.ok(third instanceof ServiceError, 'a third render is refused');
  t.equal((third as ServiceError).code, 'busy', 'with busy');
  t.equal((third as ServiceError).answer().headers['retry-after'], '1', 'and retry-after: 1');
  t.equal(started, 2, 'the refused render never ran');
  release();
  t.same((await Promise.all(held)).map((r) => r.value), ['done', 'done']);
  t.equal(pool.stats().busy, 0);
  t.equal((await pool.render(job(async () => 'again'))).value, 'again', 'a freed slot renders again');
});

t.test('a client that goes away frees its slot at once and its context is closed', async (t) => {
  const g = await startGuard(t);
  const site = await startSite(t, {
    '/hang': () => {
      // never answers
    },
  });
  const pool = await startPool(t, inProcess(g));
  const client = new AbortController();
  let page: Page | undefined;
  const hanging = pool.render(
    job(
      async (p) => {
        page = p;
        await p.goto(`${site.origin}/hang`, { waitUntil: 'load', timeout: 0 });
        return 'answered';
      },
      60_000,
      client.signal,
    ),
  );
  await until(() => site.hits('/hang') === 1);
  t.equal(pool.stats().busy, 1);
  client.abort(new Error('client went away'));
  await t.rejects(hanging, { message: 'client went away' }, 'the render ends with the client’s reason');
  t.equal(pool.stats().busy, 0, 'the slot is free at once');
  t.equal((await pool.render(job(async () => 'next'))).value, 'next', 'the next render takes the slot');
  await until(() => page!.isClosed());
  t.pass('the abandoned render’s page was closed');
});
