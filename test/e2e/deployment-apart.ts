/**
 * The roles apart (test/e2e/apart.ts) as a deployment for the contract suite: policy on
 * PostgreSQL (the ledger read there), the guard in its own namespace, two renderer pods of one
 * slot each behind the embedded edge, the Redis cache. The pages are on the host's side of the
 * guard's link; "the service itself" is the edge's own address. Spans reach one OTLP receiver on
 * the host from every namespace through a relay per namespace (a node-local collector).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { ROLE_PORTS, startApart, type Apart } from './apart.ts';
import type { ContractSetup } from './contract-suite.ts';
import type { Deployment } from './deployment.ts';
import { startOtlpReceiver } from './otlp-receiver.ts';
import { runTintype } from './service.ts';
import { startNxdomainDns, startSite, type Site } from './site.ts';
import { METRICS_PATH } from '../../lib/admin.ts';

const SLOTS_PER_POD = 1;

/** `netId`: a namespace id of its own per run (1–250), so parallel runs do not share links. */
export async function startApartDeployment(o: ContractSetup, netId = 1 + (process.pid % 250)): Promise<Deployment> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tintype-apart-otlp-'));
  const receiver = await startOtlpReceiver();
  const receiverPort = Number(new URL(receiver.endpoint).port);
  const otlpSocket = path.join(dir, 'otlp.sock');
  const toReceiver = net.createServer((c) => {
    const u = net.connect(receiverPort, '127.0.0.1');
    c.pipe(u).pipe(c);
    const end = (): void => { c.destroy(); u.destroy(); };
    for (const s of [c, u]) { s.once('error', end); s.once('close', end); }
  });
  await new Promise<void>((r) => toReceiver.listen(otlpSocket, r));
  let site: Site | undefined;
  let dns: { server: string; close(): Promise<void> } | undefined;
  const cleanup = async (): Promise<void> => {
    await site?.close();
    await dns?.close();
    await receiver.close();
    toReceiver.close();
    rmSync(dir, { recursive: true, force: true });
  };
  let apart: Apart;
  try {
    apart = await startApart(netId, { renderTimeoutMs: o.renderTimeoutMs, slots: SLOTS_PER_POD, plans: o.plans, otlpSocket, logLevel: 'debug' }, async (n) => {
      site = await startSite(n.siteAddr);
      dns = await startNxdomainDns(n.siteAddr);
      return { GUARD_DNS_SERVERS: dns.server, GUARD_ALLOW_CIDRS: `${n.siteAddr}/32,${n.edgeAddr}/32`, GUARD_SELF_ADDRESSES: n.edgeAddr };
    });
  } catch (err) {
    await cleanup();
    throw err;
  }
  const edgeAdmin = async (p: string): Promise<{ status: number; body: string }> => {
    const r = await fetch(`http://${apart.net.edgeAddr}:${ROLE_PORTS.edgeAdmin}${p}`);
    return { status: r.status, body: await r.text() };
  };
  const output = (): string => [...Object.values(apart.procs), ...apart.relays].map((p) => p.output()).join('\n');
  return {
    call: (req) => apart.call(req),
    key: (plan) => apart.key(plan),
    revoke: async (id) => (await runTintype(['keys', 'revoke', id], apart.keysEnv)).code,
    ledger: (id) => apart.ledger(id),
    used: (id) => apart.used(id),
    openLeases: (id) => apart.openLeases(id),
    async admin(p) {
      const edge = await edgeAdmin(p);
      if (p !== METRICS_PATH) return edge;
      // The deployment's metrics are the edge's and every pod's, as a scrape of each would give.
      const pods = await Promise.all((['r1', 'r2'] as const).map((m) => apart.podMetrics(m)));
      return { status: edge.status, body: [edge.body, ...pods].join('') };
    },
    slots: 2 * SLOTS_PER_POD,
    site: site!,
    selfUrl: `http://${apart.net.edgeAddr}:9`,
    receiver,
    startup: { output, announces: [/edge\.ready/, /listening/, /guard\.self_test_passed/, /guard\.admin_listening/] },
    logs: output,
    stop: () => apart.stop(),
    cleanup,
  };
}
