/**
 * Reading a target the way a browser does (docs/architecture.md §7 rule 1): scheme, userinfo, host, port,
 * by the WHATWG URL parser, so every numeric spelling (`2130706433`, `0177.0.0.1`, `0x7f.1`,
 * `127.1`, fullwidth digits and ideographic dots) becomes the dotted IPv4 address it means and
 * is never handed to a resolver; IPv6 literals are parsed as addresses (zone ids are not
 * valid in a URL and are refused). Pure functions, no I/O.
 */
import type { RejectReason } from '../lib/errors.ts';
import { parseAddress, type Address } from './address.ts';
import { isRefusedName, isResolvableName } from './names.ts';

/** The host of a target: an address to judge as it is, or a name to resolve. */
export type TargetHost = { kind: 'address'; address: Address } | { kind: 'name'; name: string };

/** A target that passed the checks that need no lookup. */
export interface Target {
  /** `http`/`https` for URLs; `tunnel` for a CONNECT authority (TLS, `wss:`). */
  scheme: 'http' | 'https' | 'tunnel';
  host: TargetHost;
  port: number;
  /** The `host[:port]` to send upstream in the `Host` header (WHATWG serialisation). */
  authority: string;
  /** Path and query, for absolute-form requests; `/` for tunnels. */
  path: string;
}

/** A target refused before any lookup. */
export interface Refused {
  reason: RejectReason;
}

export function isRefused(v: Target | Refused): v is Refused {
  return (v as Refused).reason !== undefined;
}

const SCHEME = /^([a-zA-Z][a-zA-Z0-9+.-]*):/;
const DEFAULT_PORT = { http: 80, https: 443 } as const;

/**
 * The authority part of an http(s) URL exactly as written, after the same clean-up the
 * WHATWG parser does first (outer C0/space trimmed, tabs and newlines removed; any run of
 * `/` or `\` after the scheme). The parser drops an empty userinfo (`http://:@host`), so
 * credentials are looked for in the text as well (spec Part 1 rule 6: refused, not stripped).
 */
function writtenAuthority(text: string): string {
  // eslint-disable-next-line no-control-regex
  const cleaned = text.replace(/^[\u0000-\u0020]+|[\u0000-\u0020]+$/g, '').replace(/[\t\n\r]/g, '');
  const rest = cleaned.replace(SCHEME, '').replace(/^[/\\]*/, '');
  const end = rest.search(/[/?#\\]/);
  return end === -1 ? rest : rest.slice(0, end);
}

/** Classifies a WHATWG-parsed hostname: IPv6 literal, dotted IPv4, or a name. */
function hostOf(hostname: string): TargetHost | Refused {
  if (hostname === '') return { reason: 'bad_host' };
  if (hostname.startsWith('[')) {
    const address = parseAddress(hostname.slice(1, -1));
    return address === undefined ? { reason: 'bad_host' } : { kind: 'address', address };
  }
  const address = parseAddress(hostname);
  if (address !== undefined) return { kind: 'address', address };
  if (isRefusedName(hostname) || !isResolvableName(hostname)) return { reason: 'bad_host' };
  return { kind: 'name', name: hostname };
}

/**
 * Parses an absolute URL (a page address, or the target of an absolute-form proxy request).
 * Checks in the precedence order of docs/architecture.md §7 rule 6: scheme, credentials, host.
 */
export function parseUrlTarget(text: string): Target | Refused {
  const scheme = SCHEME.exec(text.trimStart())?.[1]?.toLowerCase();
  if (scheme !== 'http' && scheme !== 'https') return { reason: 'bad_scheme' };
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return { reason: writtenAuthority(text).includes('@') ? 'credentials_in_url' : 'bad_host' };
  }
  if (url.username !== '' || url.password !== '' || writtenAuthority(text).includes('@')) {
    return { reason: 'credentials_in_url' };
  }
  const host = hostOf(url.hostname);
  if ('reason' in host) return host;
  const port = url.port === '' ? DEFAULT_PORT[scheme] : Number(url.port);
  if (port === 0) return { reason: 'bad_host' };
  return { scheme, host, port, authority: url.host, path: url.pathname + url.search };
}

const AUTHORITY = /^(\[[^\]\s]*\]|[^\s:@/?#[\]\\]+):(\d{1,5})$/;

/**
 * Parses the `host:port` of a CONNECT request. The host goes through the same WHATWG host
 * parser as a URL's, so `CONNECT 0x7f.1:443` is the loopback address it spells.
 */
export function parseConnectTarget(authority: string): Target | Refused {
  if (authority.includes('@')) return { reason: 'credentials_in_url' };
  const m = AUTHORITY.exec(authority);
  if (m === null) return { reason: 'bad_host' };
  const port = Number(m[2]);
  if (port < 1 || port > 65535) return { reason: 'bad_host' };
  let url: URL;
  try {
    url = new URL(`http://${m[1]}/`);
  } catch {
    return { reason: 'bad_host' };
  }
  const host = hostOf(url.hostname);
  if ('reason' in host) return host;
  return { scheme: 'tunnel', host, port, authority: `${url.hostname}:${port}`, path: '/' };
}

/**
 * Judges a request target without a lookup, whatever its form: CONNECT authority,
 * absolute-form URL, or origin-form / asterisk (which name no host: `bad_host`).
 */
export function parseRequestTarget(method: string, target: string): Target | Refused {
  if (method.toUpperCase() === 'CONNECT') return parseConnectTarget(target);
  if (target.startsWith('/') || target === '*' || target === '') return { reason: 'bad_host' };
  return parseUrlTarget(target);
}

/**
 * The method and target of the request line at the start of raw bytes, for requests Node's
 * parser refused before any handler ran (`data:`, `javascript:`, spaces in the target…).
 * The target is everything between the method and the last word (the HTTP version).
 */
export function requestLineOf(raw: Buffer | undefined): { method: string; target: string } | undefined {
  if (raw === undefined || raw.length === 0) return undefined;
  const text = raw.subarray(0, 8192).toString('latin1');
  const end = text.search(/\r?\n/);
  const line = end === -1 ? text : text.slice(0, end);
  const words = line.split(' ');
  if (words.length < 3) return undefined;
  return { method: words[0]!, target: words.slice(1, -1).join(' ') };
}

/**
 * The bytes of the request Node's parser failed on. `raw` is the whole chunk it was parsing,
 * which may begin with earlier pipelined requests; the failing one starts after the last blank
 * line before `failedAt` (the offset the parser reached).
 */
export function failingRequest(raw: Buffer | undefined, failedAt: number | undefined): Buffer | undefined {
  if (raw === undefined || failedAt === undefined || failedAt <= 0) return raw;
  const end = raw.lastIndexOf('\r\n\r\n', Math.min(failedAt, raw.length) - 1);
  return end === -1 ? raw : raw.subarray(end + 4);
}

/** The value of one header in raw request bytes (used for requests Node's parser refused). */
export function rawHeader(raw: Buffer | undefined, name: string): string | undefined {
  if (raw === undefined) return undefined;
  const lines = raw.subarray(0, 16384).toString('latin1').split(/\r?\n/).slice(1);
  const lower = name.toLowerCase();
  for (const line of lines) {
    if (line === '') break;
    const colon = line.indexOf(':');
    if (colon > 0 && line.slice(0, colon).trim().toLowerCase() === lower) return line.slice(colon + 1).trim();
  }
  return undefined;
}
