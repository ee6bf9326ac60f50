/**
 * No page can end the service: `tintype start` as a real process, in each isolation mode, is
 * hammered with renders of a page that keeps opening connections, https fetches and WebSockets
 * (to a site that resets them and to addresses the guard refuses) while its render ends and its
 * context closes. Afterwards the same process is alive, live, and renders an ordinary page.
 * The only pages rendered are on 127.0.0.2.
 */
import http from 'node:http';
import t from 'tap';
import { cleanup, json, jsonWith, startService } from './service.ts';
import { SITE_ADDRESS } from './site.ts';
import { listenBesideService } from '../lib/listen-beside.ts';

const HAMMER_RENDERS = 12;
const AT_ONCE = 2;

/** From its load event on, every 25 ms: fetches the site resets, and tunnels the guard refuses. */
const STORM = `<!doctype html><title>storm</title><p>storm</p><script>
  addEventListener('load', () => {
    let n = 0;
    setInterval(() => {
      for (let i = 0; i < 4; i++) {
        n += 1;
        fetch('/reset?' + n).catch(() => {});
        fetch('https://10.77.' + (n % 250) + '.' + (i + 1) + '/').catch(() => {});
        try { const ws = new WebSocket('ws://10.78.' + (n % 250) + '.' + (i + 1) + '/'); ws.onerror = () => {}; } catch {}
      }
    }, 25);
  });
</script>`;

const site = http.createServer((req, res) => {
  if (req.url === '/storm') res.writeHead(200, { 'content-type': 'text/html' }).end(STORM);
  else if (req.url?.startsWith('/reset')) req.socket.resetAndDestroy();
  else res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><h1>ordinary</h1>');
});
const sitePort = await listenBesideService(site, SITE_ADDRESS);
const origin = `http://${SITE_ADDRESS}:${sitePort}`;
t.teardown(() => new Promise<void>((r) => (site.closeAllConnections(), site.close(() => r()))));
t.teardown(cleanup);

for (const isolation of ['pod', 'netns'] as const) {
  t.test(`${isolation}: renders torn down mid-storm leave the process running and rendering`, async (t) => {
    const svc = await startService({
      env: { TINTYPE_ISOLATION: isolation, GUARD_ALLOW_CIDRS: `${SITE_ADDRESS}/32`, TINTYPE_RENDER_TIMEOUT_MS: '15000' },
    });
    let exitCode: number | null | undefined;
    void svc.exited().then((code) => (exitCode = code));
    t.teardown(() => (exitCode === undefined ? svc.signal('SIGTERM') : undefined));
    const key = await svc.key('scale');
    const render = (path: string) =>
      svc.call({ method: 'POST', path: '/v1/screenshot', headers: jsonWith(key.secret), body: JSON.stringify({ url: `${origin}${path}` }) });

    const statuses: number[] = [];
    for (let i = 0; i < HAMMER_RENDERS; i += AT_ONCE) {
      const answers = await Promise.all(Array.from({ length: AT_ONCE }, () => render('/storm')));
      statuses.push(...answers.map((a) => a.status));
    }
    t.ok(statuses.every((s) => s === 200 || s === 504), `every storm render answered (${statuses.join(' ')})`);
    t.equal(exitCode, undefined, 'the process is still running');
    t.equal(svc.stderr().includes('Unhandled'), false, 'and reported no unhandled error');
    const live = await fetch(`http://127.0.0.1:${svc.adminPort}/healthz/live`);
    t.equal(live.status, 200, 'live');
    const ordinary = await render('/ordinary');
    t.equal(ordinary.status, 200, ordinary.status === 200 ? 'an ordinary page renders' : JSON.stringify(json(ordinary)));
    t.equal(ordinary.headers['content-type'], 'image/png');
  });
}
