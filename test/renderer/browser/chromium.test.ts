/**
 * Which Chromium and which switches (docs/architecture.md §6): the headless shell is
 * preferred, CHROMIUM_PATH overrides, and every launch and context carries the walls.
 */
import t from 'tap';
import { chromiumArgs, chromiumExecutable, contextOptions, isHeadlessShell } from '../../../renderer/browser/chromium.ts';

t.test('the executable', async (t) => {
  const installed = (set: string[]) => (p: string) => set.includes(p);
  t.equal(chromiumExecutable({ chromiumPath: '/opt/c/chrome' }, installed([])), '/opt/c/chrome', 'CHROMIUM_PATH wins');
  t.equal(
    chromiumExecutable({ chromiumPath: undefined }, installed(['/usr/lib/chromium/chromium', '/usr/lib/chromium/chromium-headless-shell'])),
    '/usr/lib/chromium/chromium-headless-shell',
    'the headless shell before the full browser',
  );
  t.equal(chromiumExecutable({ chromiumPath: undefined }, installed(['/usr/bin/chromium'])), '/usr/bin/chromium', 'the Debian wrapper last');
  t.throws(() => chromiumExecutable({ chromiumPath: undefined }, installed([])), /CHROMIUM_PATH/, 'none installed: says what to set');
  t.ok(isHeadlessShell('/usr/lib/chromium/chromium-headless-shell'));
  t.notOk(isHeadlessShell('/usr/lib/chromium/chromium'));
});

t.test('the launch switches', async (t) => {
  const args = chromiumArgs({ refuseProxy: '127.0.0.1:9000', noSandbox: false });
  for (const wanted of [
    '--proxy-server=http://127.0.0.1:9000',
    '--proxy-bypass-list=<-loopback>',
    '--disable-quic',
    '--force-webrtc-ip-handling-policy=disable_non_proxied_udp',
    '--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1',
    '--dns-prefetch-disable',
    '--disable-background-networking',
  ]) {
    t.ok(args.includes(wanted), wanted);
  }
  t.notOk(args.includes('--no-sandbox'), 'the sandbox stays on when it can');
  t.ok(chromiumArgs({ refuseProxy: '127.0.0.1:9000', noSandbox: true }).includes('--no-sandbox'));
});

t.test('every render context: its lane as proxy, loopback not bypassed, no downloads', async (t) => {
  t.same(contextOptions('127.0.0.1:9003'), {
    proxyServer: 'http://127.0.0.1:9003',
    proxyBypassList: ['<-loopback>'],
    downloadBehavior: { policy: 'deny' },
  });
});
