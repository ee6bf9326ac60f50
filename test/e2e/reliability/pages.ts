/**
 * The service the page scenarios render against: `tintype start` with the e2e site on 127.0.0.2
 * opened by GUARD_ALLOW_CIDRS (every other private address stays refused), a DNS server that
 * answers nothing, and one key on a plan that allows as many renders at once as there are slots.
 */
import { send } from '../../envoy/client.ts';
import { cleanup, jsonWith, startService, type Service } from '../service.ts';
import { startNxdomainDns, startSite, type Site } from '../site.ts';

export interface PageService {
  svc: Service;
  site: Site;
  key: string;
  /** Renders `body` at `path` and returns the status and error code. */
  render(path: string, body: object): Promise<{ status: number; error?: string }>;
  close(): Promise<void>;
}

/** A render budget long enough for a loaded machine and short enough for a page that never settles. */
export const PAGE_BUDGET_MS = 10_000;

export async function startPageService(env: Record<string, string> = {}): Promise<PageService> {
  const site = await startSite();
  const dns = await startNxdomainDns();
  const svc = await startService({
    env: { GUARD_ALLOW_CIDRS: '127.0.0.2/32', GUARD_DNS_SERVERS: dns.server, TINTYPE_RENDER_TIMEOUT_MS: String(PAGE_BUDGET_MS), ...env },
    plans: { pages: { monthlyQuota: 1_000_000, perMinute: 100_000, concurrentRenders: 8 } },
  });
  const { secret } = await svc.key('pages');
  return {
    svc,
    site,
    key: secret,
    async render(path, body) {
      const a = await send({ port: svc.port, method: 'POST', path, headers: jsonWith(secret), body: JSON.stringify(body) });
      if (a.status === 200) return { status: 200 };
      try {
        const e = (JSON.parse(a.body.toString('utf8')) as { error?: unknown }).error;
        return typeof e === 'string' ? { status: a.status, error: e } : { status: a.status };
      } catch {
        return { status: a.status };
      }
    },
    async close() {
      await svc.signal('SIGTERM');
      await site.close();
      await dns.close();
      cleanup();
    },
  };
}

/** An ordinary markup render, unique so it is never a cache hit. */
export function ordinary(): object {
  return { html: `<h1>ordinary ${process.hrtime.bigint()}</h1>`, width: 320, height: 200 };
}
