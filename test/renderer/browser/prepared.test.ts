/**
 * A prepared context (docs/architecture.md §3): made while the slot is idle, it is as fresh as
 * one made at the request. Before any render it has loaded nothing (its tab is the blank page
 * it was opened on, with no resource fetched and nothing sent through its relay), and its first
 * request goes through its lane's relay to the guard under the render's own token.
 */
import net from 'node:net';
import path from 'node:path';
import t from 'tap';
import { renderAuthorization } from '../../../lib/guard-contract.ts';
import { html, startGuard, startPool, startSite, tempDir, until, type Teardowns } from './helpers.ts';

/** A unix socket in front of the guard's: passes everything through, keeps each request head. */
async function recordingFront(t: Teardowns, guardSocket: string): Promise<{ socketPath: string; heads: string[] }> {
  const socketPath = path.join(tempDir(t, 'tintype-front-'), 'front.sock');
  const heads: string[] = [];
  const open = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(guardSocket);
    for (const s of [client, upstream]) {
      open.add(s);
      s.on('close', () => open.delete(s));
      s.on('error', () => {});
    }
    let buffered = '';
    let headRead = false;
    client.on('data', (chunk: Buffer) => {
      if (headRead) return;
      buffered += chunk.toString('latin1');
      const end = buffered.indexOf('\r\n\r\n');
      if (end >= 0) {
        headRead = true;
        heads.push(buffered.slice(0, end));
      }
    });
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((r) => server.listen(socketPath, r));
  t.teardown(() => {
    for (const s of open) s.destroy();
    return new Promise<void>((r) => server.close(() => r()));
  });
  return { socketPath, heads };
}

for (const isolation of ['netns', 'pod'] as const) {
  t.test(`${isolation}: a prepared context has loaded nothing; its first request goes through its relay under the render's token`, async (t) => {
    const g = await startGuard(t);
    const front = await recordingFront(t, g.socketPath);
    const site = await startSite(t, { '/seen.png': html('') });
    const tokens: string[] = [];
    const pool = await startPool(
      t,
      // The socket alone (no URL), so both isolations dial the guard through the recording front.
      { socketPath: front.socketPath, takeTally: (token) => (tokens.push(token), g.guard.takeTally(token)) },
      { config: { slots: 1, isolation } },
    );
    // Both lanes of the slot prepared while nothing was asked of it (the start-up self-test's
    // render, whose requests went through too, is over, and its lane prepared afresh).
    await until(() => pool.stats().readyContexts >= 2);
    const headsBefore = front.heads.length;
    const selfTestTokens = new Set(tokens);

    const r = await pool.render({
      deadline: Date.now() + 15_000,
      run: async ({ cdp, signal, tally }) => {
        const history = await cdp.session.send('Page.getNavigationHistory');
        const { result } = await cdp.session.send('Runtime.evaluate', {
          expression: 'JSON.stringify({ href: location.href, markup: document.documentElement.outerHTML, resources: performance.getEntriesByType("resource").length })',
          returnByValue: true,
        });
        const before = { history: history.entries.map((e) => e.url), page: JSON.parse(result.value as string) as unknown };
        const headsAtStart = front.heads.length;
        // The first request of the render: markup with one image on the site, one on a refused address.
        await cdp.writeMarkup(`<img src="${site.origin}/seen.png"><img src="http://10.77.0.1/x.png">`, 'load', signal);
        const counted = await tally();
        return { before, headsAtStart, counted, token: tokens.at(-1)! };
      },
    });
    const { before, headsAtStart, counted, token } = r.value;

    t.same(before.history, ['about:blank'], 'the tab was never navigated: its only entry is the blank page');
    t.same(before.page, { href: 'about:blank', markup: '<html><head></head><body></body></html>', resources: 0 }, 'and holds the empty document, with nothing fetched');
    t.equal(headsAtStart, headsBefore, 'nothing went through any relay between the preparing and the render’s first request');
    t.notOk(selfTestTokens.has(token), 'the render’s token is its own, not the self-test’s');

    const sent = front.heads.slice(headsAtStart);
    t.ok(sent.length >= 2, 'the render’s requests reached the guard through the relay');
    const authorization = renderAuthorization(token);
    for (const head of sent) {
      t.match(head, new RegExp(`^proxy-authorization: ${authorization.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`, 'im'), 'each under the render’s own token');
    }
    t.equal(site.hits('/seen.png'), 1, 'the allowed image was fetched once');
    t.match(counted, { blocked: 1, firstReason: 'private_address' }, 'the refused image counted for this render');
    t.same(r.tally, counted, 'and its final tally is that one');

    // The lane it used is closed; the next render takes the other prepared context, under another token.
    const next = await pool.render({
      deadline: Date.now() + 15_000,
      run: async ({ tally }) => (await tally(), tokens.at(-1)!),
    });
    t.not(next.value, token, 'the next render is named differently');
    t.same(next.tally, { blocked: 0, firstReason: null, refused: [] }, 'and counts nothing of the first one');
  });
}
