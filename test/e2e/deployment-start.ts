/**
 * `tintype start` as a deployment for the contract suite: one process (test/e2e/service.ts)
 * with one render slot, its ledger in the SQLite of its data dir, the pages on 127.0.0.2
 * (opened with GUARD_ALLOW_CIDRS), spans to a loopback OTLP receiver.
 */
import type { Deployment } from './deployment.ts';
import { startOtlpReceiver } from './otlp-receiver.ts';
import { cleanup, runTintype, startService } from './service.ts';
import { startNxdomainDns, startSite } from './site.ts';
import type { ContractSetup } from './contract-suite.ts';

export async function startStartDeployment(o: ContractSetup): Promise<Deployment> {
  const receiver = await startOtlpReceiver();
  const site = await startSite();
  const dns = await startNxdomainDns();
  const svc = await startService({
    env: {
      TINTYPE_SLOTS: '1',
      TINTYPE_RENDER_TIMEOUT_MS: String(o.renderTimeoutMs),
      GUARD_ALLOW_CIDRS: '127.0.0.2/32,127.0.0.4/32',
      GUARD_SELF_ADDRESSES: '127.0.0.4',
      GUARD_DNS_SERVERS: dns.server,
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      TINTYPE_LOG_LEVEL: 'debug',
    },
    plans: o.plans,
  });
  const admin = async (path: string): Promise<{ status: number; body: string }> => {
    const r = await fetch(`http://127.0.0.1:${svc.adminPort}${path}`);
    return { status: r.status, body: await r.text() };
  };
  return {
    call: (req) => svc.call(req),
    key: (plan) => svc.key(plan),
    revoke: async (id) => (await runTintype(['keys', 'revoke', id], svc.env)).code,
    ledger: async (id) => svc.ledger(id),
    used: async (id) => svc.used(id),
    openLeases: async (id) => svc.openLeases(id),
    admin,
    slots: 1,
    site,
    selfUrl: 'http://127.0.0.4:9',
    receiver,
    startup: {
      output: () => svc.stdout(),
      announces: [/"event":"start.listening",.*"url":"http:\/\/localhost:\d+"/, /bin\/tintype keys create --plan free/],
    },
    logs: () => svc.stderr() + svc.stdout(),
    stop: () => svc.signal('SIGTERM'),
    async cleanup() {
      await site.close();
      await dns.close();
      await receiver.close();
      cleanup();
    },
  };
}
