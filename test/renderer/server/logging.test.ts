/**
 * What the logs hold (spec Part 7, 4.5 rule 7; docs/architecture.md §6): the URL and HTML of a request and
 * the API key never appear in any line of the renderer, its guard or its pool, at debug level,
 * whatever the outcome; the OG query does appear on the access line, with keys masked.
 */
import t from 'tap';
import { createOgDrawer } from '../../../renderer/og/index.ts';
import { get, newLease, post, startHarness, startSite, until } from './harness.ts';
import type { Operation } from '../../../lib/policy-contract.ts';

const lines: string[] = [];
const site = await startSite((_req, res) => {
  res.writeHead(200, { 'content-type': 'text/html' });
  res.end('<!doctype html><p>ok</p><img src="http://10.3.3.3/pixel-marker.png">');
});
const og = createOgDrawer({ threads: 1 });
await og.start();
const h = await startHarness({ og, logSink: (line) => lines.push(line) });
t.teardown(async () => {
  await h.close();
  await og.stop();
  await site.close();
});

t.test('no URL, HTML or key in any log line', async (t) => {
  const secret = 'sk_live_loggingsecret987654';
  const marker = 'zq-private-marker';
  const headers = { authorization: `Bearer ${secret}` };
  const calls: [string, unknown][] = [
    ['screenshot', { url: `${site.origin}/${marker}?q=${marker}`, width: 20, height: 20 }],
    ['screenshot', { url: `http://10.0.0.9/${marker}` }],
    ['screenshot', { url: `file:///${marker}` }],
    ['screenshot', { url: `${marker}-not-absolute` }],
    ['html-to-image', { html: `<p>${marker}</p><img src="http://10.0.0.8/${marker}.png">`, width: 20, height: 20 }],
    ['html-to-image', { html: `<p>${marker}</p>`, width: 0 }],
    ['pdf', { html: `<p>${marker}</p>` }],
    ['pdf', { url: `http://user:${marker}@example.com/` }],
  ];
  const leases: string[] = [];
  for (const [op, body] of calls) {
    const lease = newLease(op as Operation);
    leases.push(lease);
    await post(h, op, body, { headers, lease });
  }
  await until(() => leases.every((l) => h.settler.settled.some((s) => s.lease === l)), 'every settle');
  t.ok(lines.length > 0, `${lines.length} lines written`);
  t.ok(lines.some((l) => l.includes('"event":"request"')), 'access lines are written');
  const leaks = lines.filter((l) => l.includes(marker) || l.includes(secret) || l.includes('pixel-marker'));
  t.same(leaks, [], 'no line holds the URL, the HTML or the key');
});

t.test('the OG query is on the access line, keys masked', async (t) => {
  lines.length = 0;
  const lease = newLease('og');
  await get(h, '/v1/og?template=title&title=Quarterly%20report&api_key=sk_live_ogquerysecret12345', lease);
  await until(() => h.settler.settled.some((s) => s.lease === lease), 'the settle');
  const access = lines.filter((l) => l.includes('"event":"request"') && l.includes('"operation":"og"'));
  t.equal(access.length, 1);
  t.match(access[0], 'title=Quarterly%20report');
  t.notMatch(access[0], 'sk_live_ogquerysecret12345', 'the key is masked');
});
