/**
 * Hop-by-hop headers (RFC 9110 §7.6.1) are never forwarded, in either direction: above all
 * `Proxy-Authorization`, which names the render (lib/guard-contract.ts) and must never reach a
 * target. Headers listed in `Connection` are hop-by-hop too. `Host` is rewritten from the
 * absolute-form target, as a proxy must.
 */
import { HOP_BY_HOP } from '../lib/hop-by-hop.ts';

/**
 * Never forwarded: the hop-by-hop headers, and `expect`: Node's server answers `100 Continue`
 * itself, so forwarding the expectation would ask twice.
 */
const NOT_FORWARDED = new Set([...HOP_BY_HOP, 'expect']);

function connectionTokens(raw: readonly string[]): Set<string> {
  const named = new Set<string>();
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i]!.toLowerCase() === 'connection') {
      for (const token of raw[i + 1]!.split(',')) named.add(token.trim().toLowerCase());
    }
  }
  return named;
}

/**
 * The end-to-end headers of a raw header list (`rawHeaders` form: name, value, name, value…).
 * `keep` names hop-by-hop headers to pass on anyway (`upgrade`/`connection` for a WebSocket
 * handshake); `drop` names (lower case) end-to-end headers to leave out as well; `host`, when
 * given, replaces every Host header.
 */
export function endToEnd(
  raw: readonly string[],
  options: { host?: string; keep?: readonly string[]; drop?: readonly string[] } = {},
): string[] {
  const named = connectionTokens(raw);
  const keep = new Set(options.keep ?? []);
  for (const name of options.drop ?? []) named.add(name);
  const out: string[] = [];
  if (options.host !== undefined) out.push('Host', options.host);
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    const lower = name.toLowerCase();
    if (options.host !== undefined && lower === 'host') continue;
    if ((NOT_FORWARDED.has(lower) || named.has(lower)) && !keep.has(lower)) continue;
    out.push(name, raw[i + 1]!);
  }
  return out;
}
