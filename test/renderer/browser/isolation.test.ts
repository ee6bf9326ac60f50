/**
 * Isolation (docs/architecture.md §1, §6): in `netns` Chromium sits in a network
 * namespace of its own with only loopback, CDP over a pipe, its one way out the guard's unix
 * socket; in `pod` it shares the renderer's network and the proxy settings are the only wall.
 * In both every context goes through the guard with `<-loopback>` bypassed nothing, QUIC is off,
 * WebRTC sends no non-proxied UDP and Chromium resolves no name itself.
 */
import dgram from 'node:dgram';
import { readFileSync } from 'node:fs';
import type { Page } from 'puppeteer-core';
import t from 'tap';
import {
  SITE_NAME,
  chromiumPid,
  cmdline,
  html,
  inProcess,
  interfacesSeenBy,
  job,
  launchedPid,
  namespaceOf,
  netNamespace,
  startGuard,
  startPool,
  startCanary,
  startSite,
  until,
} from './helpers.ts';

const PAGE = '<!doctype html><title>ok</title><p id="p">served</p>';

t.test('netns: its own namespace with only loopback, CDP over a pipe, the site reached through the guard', async (t) => {
  const g = await startGuard(t);
  const site = await startSite(t, { '/': html(PAGE) });
  const pool = await startPool(t, { socketPath: g.socketPath, takeTally: (tk) => g.guard.takeTally(tk) });
  t.ok(pool.selfTestPassed(), 'the self-test passed');

  const r = await pool.render(
    job(async (page) => {
      await page.goto(`${site.origin}/`, { waitUntil: 'load' });
      const text = await page.$eval('#p', (e) => e.textContent);
      return { text, launched: launchedPid(page) };
    }),
  );
  t.equal(r.value.text, 'served', 'the allowed site was rendered (through the relay and the guard)');
  t.equal(r.tally.blocked, 0);

  const chromium = chromiumPid(r.value.launched);
  t.not(netNamespace(chromium), netNamespace('self'), 'Chromium is in another network namespace');
  t.same(interfacesSeenBy(chromium), ['lo'], 'and sees no interface but loopback');
  const args = cmdline(chromium);
  t.ok(args.includes('--remote-debugging-pipe'), 'CDP runs over a pipe');
  t.notOk(
    args.some((a) => a.startsWith('--remote-debugging-port')),
    'no CDP port is opened',
  );
});

t.test('netns through a user namespace (how a renderer that is not root launches)', async (t) => {
  const g = await startGuard(t);
  const site = await startSite(t, { '/': html(PAGE) });
  const pool = await startPool(t, inProcess(g), { netnsUserNamespace: true });
  t.ok(pool.selfTestPassed(), 'the self-test passed');
  const r = await pool.render(
    job(async (page) => {
      await page.goto(`${site.origin}/`, { waitUntil: 'load' });
      return { text: await page.$eval('#p', (e) => e.textContent), launched: launchedPid(page) };
    }),
  );
  t.equal(r.value.text, 'served');
  const chromium = chromiumPid(r.value.launched);
  t.not(namespaceOf(chromium, 'user'), namespaceOf('self', 'user'), 'Chromium is in a user namespace of its own');
  t.not(netNamespace(chromium), netNamespace('self'), 'and a network namespace of its own');
  t.same(interfacesSeenBy(chromium), ['lo'], 'with only loopback');
  t.notOk(cmdline(chromium).includes('--no-sandbox'), 'not root there: with its own sandbox on');
});

t.test('netns with a guard known only by GUARD_URL: bridged over a unix socket', async (t) => {
  const g = await startGuard(t);
  const site = await startSite(t, { '/': html(PAGE) });
  const pool = await startPool(t, { url: g.url });
  t.ok(pool.selfTestPassed(), 'the self-test passed through the bridge');
  const r = await pool.render(
    job(async (page) => {
      await page.goto(`${site.origin}/`, { waitUntil: 'load' });
      await page.setContent('<img src="http://10.9.9.9/x.png">', { waitUntil: 'load' });
      return page.$eval('img', () => 'rendered');
    }),
  );
  t.equal(r.value, 'rendered');
  t.equal(r.tally.blocked, 1, 'the tally is read from the guard over HTTP');
});

for (const isolation of ['netns', 'pod'] as const) {
  t.test(`${isolation}: the launch flags`, async (t) => {
    const g = await startGuard(t);
    const pool = await startPool(t, inProcess(g), { config: { isolation } });
    const launched = (await pool.render(job(async (page) => launchedPid(page)))).value;
    const args = cmdline(chromiumPid(launched));
    t.ok(args.includes('--proxy-bypass-list=<-loopback>'), 'loopback is not bypassed');
    t.ok(args.some((a) => a.startsWith('--proxy-server=http://127.0.0.1:')), 'a launch-level proxy (the refusing one)');
    t.ok(args.includes('--disable-quic'), 'QUIC is off');
    t.ok(args.includes('--force-webrtc-ip-handling-policy=disable_non_proxied_udp'), 'WebRTC: no non-proxied UDP');
    t.ok(
      args.some((a) => a.startsWith('--host-resolver-rules=MAP * ~NOTFOUND')),
      'Chromium resolves no name itself',
    );
  });
}

t.test('pod: the proxy settings alone keep loopback, names and UDP behind the guard', async (t) => {
  const g = await startGuard(t);
  const site = await startSite(t, { '/': html(PAGE) });
  // Only GUARD_URL: the relays dial the guard over TCP and the tally is read over HTTP.
  const pool = await startPool(t, { url: g.url }, { config: { isolation: 'pod' } });
  t.ok(pool.selfTestPassed(), 'the self-test passed');
  const canary = await startCanary(t, '127.0.0.1');

  t.test('a name is resolved by the guard, not by Chromium', async (t) => {
    const r = await pool.render(
      job(async (page) => {
        await page.goto(`http://${SITE_NAME}:${site.port}/`, { waitUntil: 'load' });
        return page.$eval('#p', (e) => e.textContent);
      }),
    );
    t.equal(r.value, 'served');
  });

  t.test('loopback goes through the guard (every context has <-loopback>) and is refused', async (t) => {
    const targets = [`http://127.0.0.1:${canary.port}/`, `http://localhost:${canary.port}/`];
    for (const target of targets) {
      const r = await pool.render(
        job(async (page) => {
          const answer = await page.goto(target, { waitUntil: 'load' }).catch(() => null);
          return answer?.status() ?? null;
        }),
      );
      t.not(r.value, 200, 'the page was not served');
      t.equal(r.tally.blocked, 1, 'the guard refused it, for this render');
    }
    const fetched = await pool.render(
      job(async (page) => {
        await page.goto(`${site.origin}/`, { waitUntil: 'load' });
        return page.evaluate(
          (u) => fetch(u, { mode: 'no-cors' }).then(() => 'answered', () => 'failed'),
          `http://127.0.0.1:${canary.port}/x`,
        );
      }),
    );
    t.ok(['answered', 'failed'].includes(fetched.value), 'the fetch settled (with the guard\'s 403 or an error)');
    t.equal(fetched.tally.blocked, 1, 'the guard refused the fetch, for this render');
    t.equal(canary.accepted(), 0, 'the loopback canary saw no connection');
  });

  t.test('WebRTC sends no UDP around the proxy', async (t) => {
    const udp = dgram.createSocket('udp4');
    let datagrams = 0;
    udp.on('message', () => (datagrams += 1));
    await new Promise<void>((r) => udp.bind(0, '127.0.0.1', r));
    t.teardown(() => udp.close());
    const stun = `stun:127.0.0.1:${udp.address().port}`;
    const r = await pool.render(
      job(async (page) => {
        await page.goto(`${site.origin}/`, { waitUntil: 'load' });
        // A string: the test's TypeScript has no DOM types; this runs in the page.
        const script = `(async () => {
          const pc = new RTCPeerConnection({ iceServers: [{ urls: ${JSON.stringify(stun)} }] });
          const candidates = [];
          pc.onicecandidate = (e) => { if (e.candidate) candidates.push(e.candidate.candidate); };
          pc.createDataChannel('x');
          await pc.setLocalDescription(await pc.createOffer());
          await new Promise((done) => {
            if (pc.iceGatheringState === 'complete') return done();
            pc.onicegatheringstatechange = () => pc.iceGatheringState === 'complete' && done();
          });
          pc.close();
          return candidates;
        })()`;
        return (await page.evaluate(script)) as string[];
      }),
    );
    t.same(
      r.value.filter((c) => / udp /i.test(c)),
      [],
      'no UDP candidate was gathered',
    );
    t.equal(datagrams, 0, 'the STUN canary received no datagram');
  });
});

t.test("pod: none of the renderer's variables reaches Chromium; a missing sandbox is said once, at start", async (t) => {
  const secret = `marker-${Math.random().toString(36).slice(2)}`;
  process.env['TINTYPE_TEST_SECRET'] = secret;
  t.teardown(() => delete process.env['TINTYPE_TEST_SECRET']);
  const g = await startGuard(t);
  const lines: string[] = [];
  // A browser per render: the relaunch must not say it again.
  const pool = await startPool(t, inProcess(g), { config: { isolation: 'pod', recycleAfterRenders: 1 }, lines });
  // Read while the render runs: the browser serving it is alive then.
  const seen = (page: Page) => {
    const chromium = chromiumPid(launchedPid(page));
    return { launched: launchedPid(page), args: cmdline(chromium), environ: readFileSync(`/proc/${chromium}/environ`, 'utf8').split('\0') };
  };
  const first = (await pool.render(job(async (page) => seen(page)))).value;
  let second = first;
  await until(async () => {
    second = (await pool.render(job(async (page) => seen(page)))).value;
    return second.launched !== first.launched;
  });
  const { environ, args } = second;
  t.notOk(environ.some((e) => e.startsWith('TINTYPE_TEST_SECRET=') || e.includes(secret)), 'the variable is not in its environment');
  t.notOk(environ.some((e) => /^(TINTYPE_|OTEL_|DATABASE_URL=|REDIS_URL=|GUARD_)/.test(e)), "nor any of the service's kinds");
  const warnings = lines.map((l) => JSON.parse(l) as { event: string; detail?: string }).filter((l) => l.event === 'browser.sandbox_off');
  if (process.getuid?.() === 0) {
    t.equal(warnings.length, 1, 'as root its sandbox cannot be had: said once, over two launches');
    t.match(warnings[0]?.detail, /root/, 'naming why');
    t.ok(args.includes('--no-sandbox'));
  } else {
    t.same(warnings, [], 'not root: nothing to say where the sandbox runs');
  }
});
