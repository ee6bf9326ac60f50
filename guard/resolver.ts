/**
 * The guard's one lookup per target (docs/architecture.md §7 rule 3): A and AAAA together, every answer,
 * bounded by a timeout. GUARD_DNS_SERVERS names the servers (node:dns Resolver.setServers);
 * unset, the system's configured name servers (resolv.conf) are asked. `/etc/hosts` is not
 * consulted: it maps names to local addresses, which is exactly what a page must not reach.
 */
import { promises as dns } from 'node:dns';

/** Every address a name resolves to (A and AAAA), or a DnsFailure. The seam tests replace. */
export type Resolve = (name: string) => Promise<string[]>;

/** The name did not resolve to anything usable (`dns_failure`). `code` is for the log only. */
export class DnsFailure extends Error {
  override name = 'DnsFailure';
  constructor(readonly code: string) {
    super(`lookup failed: ${code}`);
  }
}

/** Codes meaning "the name exists but has no record of this type": not a failure by itself. */
const NO_DATA = new Set(['ENODATA']);

function timeout<T>(ms: number, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DnsFailure('ETIMEOUT')), ms);
  });
  return Promise.race([work, expired]).finally(() => clearTimeout(timer));
}

/**
 * A resolver that asks `servers` (`ip[:port]`, `[v6]:port`) or the system's name servers.
 * Both queries must come back: NXDOMAIN, SERVFAIL, a refusal or a timeout of either one is a
 * failure, because the guard must see every answer before it trusts any (decision: a name
 * whose AAAA query fails is refused even if its A records are fine). No answers at all is a
 * failure too.
 */
export function createResolver(options: { servers: readonly string[]; timeoutMs: number }): Resolve {
  const resolver = new dns.Resolver({ timeout: options.timeoutMs, tries: 1 });
  if (options.servers.length > 0) resolver.setServers([...options.servers]);
  const query = async (lookup: Promise<string[]>): Promise<string[]> => {
    try {
      return await lookup;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? 'EUNKNOWN';
      if (NO_DATA.has(code)) return [];
      throw new DnsFailure(code);
    }
  };
  return async (name) => {
    const [v4, v6] = await timeout(
      options.timeoutMs,
      Promise.all([query(resolver.resolve4(name)), query(resolver.resolve6(name))]),
    );
    const all = [...v4, ...v6];
    if (all.length === 0) throw new DnsFailure('ENODATA');
    return all;
  };
}
