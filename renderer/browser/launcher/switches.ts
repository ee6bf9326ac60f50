/**
 * Chromium's switches (docs/architecture.md §3: every context through the guard, `<-loopback>`
 * bypassed nothing, no QUIC, no non-proxied UDP for WebRTC, no name resolved by Chromium itself),
 * and which switches the launcher accepts from the renderer: the walls' own and puppeteer's
 * defaults, nothing that opens another way in (a debugging port), runs another program (a command
 * prefix) or moves what the launcher decides (profile, sandbox, headless mode, the pipe).
 */

/** The loopback address relays listen on; the one name Chromium may still resolve (an address). */
export const RELAY_HOST = '127.0.0.1';

/** Chromium's switches besides puppeteer's defaults. */
export function chromiumArgs(options: { refuseProxy: string; noSandbox: boolean }): string[] {
  const args = [
    // The default context (Chromium's own traffic) goes to the refusing proxy, loopback included.
    `--proxy-server=http://${options.refuseProxy}`,
    '--proxy-bypass-list=<-loopback>',
    '--disable-quic',
    '--force-webrtc-ip-handling-policy=disable_non_proxied_udp',
    '--webrtc-ip-handling-policy=disable_non_proxied_udp',
    // Every name is resolved by the guard through the proxy; Chromium resolves none itself.
    // The relays are reached by address, which the exclusion keeps usable.
    `--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE ${RELAY_HOST}`,
    '--dns-prefetch-disable',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-domain-reliability',
    '--disable-sync',
    '--no-first-run',
    '--no-default-browser-check',
    '--no-pings',
    '--disable-gpu',
    '--disable-extensions',
    '--mute-audio',
  ];
  // Only where its sandbox cannot be had (said why, once, at start).
  if (options.noSandbox) args.push('--no-sandbox');
  return args;
}

/** Switches accepted with any value (or none). */
const ACCEPTED = new Set([
  // The walls (chromiumArgs), but the proxy, checked below.
  'proxy-bypass-list',
  'disable-quic',
  'force-webrtc-ip-handling-policy',
  'webrtc-ip-handling-policy',
  'host-resolver-rules',
  'dns-prefetch-disable',
  'disable-background-networking',
  'disable-component-update',
  'disable-domain-reliability',
  'disable-sync',
  'no-first-run',
  'no-default-browser-check',
  'no-pings',
  'disable-gpu',
  'disable-extensions',
  'mute-audio',
  // puppeteer's defaults (puppeteer.defaultArgs()).
  'allow-pre-commit-input',
  'disable-background-timer-throttling',
  'disable-backgrounding-occluded-windows',
  'disable-breakpad',
  'disable-client-side-phishing-detection',
  'disable-component-extensions-with-background-pages',
  'disable-crash-reporter',
  'disable-default-apps',
  'disable-dev-shm-usage',
  'disable-hang-monitor',
  'disable-infobars',
  'disable-ipc-flooding-protection',
  'disable-popup-blocking',
  'disable-prompt-on-repost',
  'disable-renderer-backgrounding',
  'disable-search-engine-choice-screen',
  'enable-automation',
  'export-tagged-pdf',
  'force-color-profile',
  'generate-pdf-document-outline',
  'metrics-recording-only',
  'password-store',
  'use-mock-keychain',
  'disable-features',
  'enable-features',
  'hide-scrollbars',
]);

/** The only proxy accepted: a relay on this pod's loopback. */
const PROXY = /^--proxy-server=http:\/\/127\.0\.0\.1:([1-9][0-9]{0,4})$/;

/** Why `args` cannot be given to Chromium, or undefined when every switch is accepted. */
export function refusedSwitch(args: unknown): string | undefined {
  if (!Array.isArray(args)) return 'args is not a list';
  for (const arg of args) {
    if (typeof arg !== 'string') return 'a switch is not a string';
    const proxy = PROXY.exec(arg);
    if (proxy !== null) {
      if (Number(proxy[1]) > 65_535) return 'the proxy port is out of range';
      continue;
    }
    const m = /^--([a-z0-9-]+)(=.*)?$/s.exec(arg);
    if (m === null || !ACCEPTED.has(m[1]!)) return `switch not accepted: ${arg.slice(0, 80)}`;
  }
  return undefined;
}
