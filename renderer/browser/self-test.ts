/**
 * The start-up self-test (docs/security.md "Start-up self-test"; spec Part 7 `guard_unverified`):
 * before the first render the renderer proves the walls hold. Canary listeners open on loopback
 * and on other local addresses; a page written with setContent (no server the guard allows)
 * tries to reach them every way a page can: sub-resources, frames, client-side redirects (meta
 * refresh and script), fetch, a beacon, an event stream and WebSockets, under several spellings
 * of the address. The test passes only if the canaries saw no connection at all AND the guard
 * counted refusals for that render, so a missing or unreachable guard fails it. (An HTTP
 * redirect needs a server the guard lets through, which the test must not assume; the guard
 * judges each hop as a request of its own.)
 */
import net from 'node:net';
import os from 'node:os';
import ipaddr from 'ipaddr.js';
import type { RenderJob, RenderResult } from './types.ts';
import { listen } from '../../lib/listen.ts';
import { untilAborted } from './bounded-wait.ts';

/** What the self-test saw. */
export interface SelfTestReport {
  passed: boolean;
  /** Connections the canaries accepted (must be 0). */
  canaryConnections: number;
  /** Refusals the guard counted for the test render (must be above 0). */
  blocked: number;
  /** Why it failed, in words (never a URL of a client). */
  failure?: string;
}

interface Canary {
  address: string;
  port: number;
  server: net.Server;
}

const SETTLE_MS = 300;
/** Resolves in the page once its script has tried every canary. */
const SELF_TEST_DONE =
  'new Promise((resolve) => { const look = () => (window.__tintypeSelfTestDone === true ? resolve(true) : setTimeout(look, 20)); look(); })';

function allowedByOperator(address: string, allowCidrs: readonly string[]): boolean {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.parse(address);
  } catch {
    return false;
  }
  return allowCidrs.some((cidr) => {
    try {
      const [range, bits] = ipaddr.parseCIDR(cidr);
      return range.kind() === parsed.kind() && parsed.match([range, bits] as [typeof parsed, number]);
    } catch {
      return false;
    }
  });
}

/** Loopback, a second loopback address, and this machine's own interface addresses. */
export function canaryAddresses(allowCidrs: readonly string[]): string[] {
  const candidates = ['127.0.0.1', '127.0.0.2', '::1'];
  for (const list of Object.values(os.networkInterfaces())) {
    for (const info of list ?? []) {
      if (info.internal) continue;
      if (info.family === 'IPv6' && info.address.startsWith('fe80')) continue; // needs a zone; not dialable by URL
      candidates.push(info.address);
      break;
    }
  }
  // An address the operator deliberately opened (GUARD_ALLOW_CIDRS) is not a wall to test.
  return [...new Set(candidates)].filter((a) => !allowedByOperator(a, allowCidrs));
}

async function openCanary(address: string, seen: { count: number }): Promise<Canary | undefined> {
  const server = net.createServer((socket) => {
    seen.count += 1;
    socket.destroy();
  });
  try {
    await listen(server, { port: 0, host: address });
  } catch {
    return undefined; // e.g. no IPv6 on this machine
  }
  return { address, port: (server.address() as net.AddressInfo).port, server };
}

/** The ways a page may spell a canary's host in a URL. */
function spellings(address: string): string[] {
  if (address.includes(':')) return [`[${address}]`];
  const out = [address];
  if (address === '127.0.0.1') {
    out.push('localhost', '2130706433', '0x7f.0.0.1', '0177.0.0.1', '[::ffff:127.0.0.1]', '0.0.0.0', 'tintype-self-test.localhost');
  }
  return out;
}

function attr(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');
}

/** The test page: every way out that a page has, aimed at every canary. */
export function selfTestPage(canaries: ReadonlyArray<{ address: string; port: number }>): string {
  const markup: string[] = [];
  const targets: string[] = [];
  // Chromium lets one WebSocket per address connect at a time, with a back-off after each
  // failure: one plain and one TLS socket per canary keep the test short.
  const sockets: string[] = [];
  for (const c of canaries) {
    sockets.push(`${spellings(c.address)[0]}:${c.port}`);
    for (const host of spellings(c.address)) {
      const base = `http://${host}:${c.port}`;
      targets.push(`${host}:${c.port}`);
      markup.push(
        `<img src="${attr(base)}/img.png">`,
        `<link rel="stylesheet" href="${attr(base)}/style.css">`,
        `<iframe src="${attr(base)}/frame"></iframe>`,
        `<iframe srcdoc="${attr(`<meta http-equiv="refresh" content="0;url=${base}/redirect">`)}"></iframe>`,
        `<iframe srcdoc="${attr(`<script>location.href = ${JSON.stringify(`${base}/js-redirect`)};</script>`)}"></iframe>`,
        `<script async src="${attr(base)}/script.js"></script>`,
        `<div style="background-image: url('${attr(base)}/background.png')">&nbsp;</div>`,
      );
    }
  }
  const script = `
    const targets = ${JSON.stringify(targets)};
    const sockets = ${JSON.stringify(sockets)};
    const tries = [];
    for (const t of targets) {
      tries.push(fetch('http://' + t + '/fetch', { mode: 'no-cors' }).catch(() => {}));
      tries.push(fetch('https://' + t + '/tls', { mode: 'no-cors' }).catch(() => {}));
      try { navigator.sendBeacon('http://' + t + '/beacon', 'x'); } catch {}
      tries.push(new Promise((done) => {
        try {
          const events = new EventSource('http://' + t + '/events');
          events.onerror = () => { events.close(); done(); };
        } catch { done(); }
      }));
    }
    for (const t of sockets) {
      for (const scheme of ['ws', 'wss']) {
        tries.push(new Promise((done) => {
          try {
            const ws = new WebSocket(scheme + '://' + t + '/socket');
            ws.onopen = ws.onerror = ws.onclose = () => done();
          } catch { done(); }
        }));
      }
    }
    Promise.allSettled(tries).then(() => { window.__tintypeSelfTestDone = true; });
  `;
  return `<!doctype html><html><head><title>self-test</title></head><body>${markup.join('\n')}<script>${script}</script></body></html>`;
}

/** Runs the self-test through `render` (the pool's render path, before it is verified). */
export async function runSelfTest(options: {
  render: <T>(job: RenderJob<T>) => Promise<RenderResult<T>>;
  budgetMs: number;
  allowCidrs: readonly string[];
  /** Ends the test render early (the pool is stopping). */
  signal?: AbortSignal;
}): Promise<SelfTestReport> {
  const seen = { count: 0 };
  const canaries = (await Promise.all(canaryAddresses(options.allowCidrs).map((a) => openCanary(a, seen)))).filter(
    (c): c is Canary => c !== undefined,
  );
  try {
    if (canaries.length === 0) return { passed: false, canaryConnections: 0, blocked: 0, failure: 'no canary could listen' };
    const deadline = Date.now() + options.budgetMs;
    let result: RenderResult<void>;
    try {
      result = await options.render({
        deadline,
        ...(options.signal === undefined ? {} : { signal: options.signal }),
        // The default renders' own path (raw CDP on the prepared tab), so it is what is proved.
        run: async ({ cdp, signal }) => {
          await cdp.writeMarkup(selfTestPage(canaries), 'load', signal);
          await untilAborted(cdp.session.send('Runtime.evaluate', { expression: SELF_TEST_DONE, awaitPromise: true }), signal);
          await new Promise((r) => setTimeout(r, SETTLE_MS)); // client-side redirects fire after load
        },
      });
    } catch (err) {
      return {
        passed: false,
        canaryConnections: seen.count,
        blocked: 0,
        failure: `the test render failed: ${(err as Error).message}`,
      };
    }
    const blocked = result.tally.blocked;
    if (seen.count > 0) {
      return { passed: false, canaryConnections: seen.count, blocked, failure: 'a canary was reached' };
    }
    if (blocked === 0) {
      return { passed: false, canaryConnections: 0, blocked, failure: 'the guard counted no refusal' };
    }
    return { passed: true, canaryConnections: 0, blocked };
  } finally {
    await Promise.all(canaries.map((c) => new Promise<void>((r) => c.server.close(() => r()))));
  }
}
