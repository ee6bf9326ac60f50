/**
 * What the end-to-end contract suite (test/e2e/contract-suite.ts) needs of a deployment, so the
 * same cases run against `tintype start` (test/e2e/deployment-start.ts) and against the roles
 * apart (test/e2e/deployment-apart.ts): the public port, keys, the usage ledger of whichever
 * store policy uses, the admin side, the site the pages are served from, where spans arrive.
 */
import type { Answer, SendOptions } from '../envoy/client.ts';
import type { OtlpReceiver } from './otlp-receiver.ts';
import type { LedgerRow } from './service.ts';
import type { Site } from './site.ts';
import type { LIVE_PATH, METRICS_PATH, READY_PATH } from '../../lib/admin.ts';

export interface Deployment {
  /** Sends a request to the public port. */
  call(o: Omit<SendOptions, 'port'>): Promise<Answer>;
  /** Makes a key on `plan` with `bin/tintype keys create` against the deployment's store. */
  key(plan: string): Promise<{ secret: string; id: string }>;
  /** Revokes a key with `bin/tintype keys revoke`; resolves with its exit code. */
  revoke(keyId: string): Promise<number | null>;
  /** The ledger rows of one key, in order. */
  ledger(keyId: string): Promise<LedgerRow[]>;
  /** The calls counted against a key's quota this month. */
  used(keyId: string): Promise<number>;
  /** Leases of `keyId` not yet settled or expired. */
  openLeases(keyId: string): Promise<number>;
  /** The admin side: probes and metrics, never on the public port (status and body). */
  admin(path: typeof LIVE_PATH | typeof READY_PATH | typeof METRICS_PATH): Promise<{ status: number; body: string }>;
  /** Render slots across every renderer: holding this many renders takes every slot. */
  slots: number;
  /** The site every page is served from (the guard opens it and nothing else private). */
  site: Site;
  /** A `http://<address>:9/` the guard treats as the service itself (GUARD_SELF_ADDRESSES). */
  selfUrl: string;
  /** Where the deployment's spans arrive. */
  receiver: OtlpReceiver;
  /** What the deployment printed while starting, and what it must have said there. */
  startup: { output(): string; announces: RegExp[] };
  /** Every log line every process wrote so far. */
  logs(): string;
  /** SIGTERM to every process; resolves with 0 when each exited 0, else the first other code. */
  stop(): Promise<number | null>;
  /** Removes what the deployment made (site, receiver, data, namespaces); after `stop`. */
  cleanup(): Promise<void>;
}

/** Waits until the ledger of `keyId` holds `n` rows (the test's timeout bounds the wait). */
export async function ledgerOf(d: Deployment, keyId: string, n: number): Promise<LedgerRow[]> {
  for (;;) {
    const rows = await d.ledger(keyId);
    if (rows.length >= n) return rows;
    await new Promise((r) => setTimeout(r, 25));
  }
}

/**
 * Waits until `keyId` holds no open lease: every answer it got has been settled. The way to
 * wait for a 400 or a 503, which close their lease and write no usage (docs/architecture.md §6).
 */
export async function leasesClosed(d: Deployment, keyId: string): Promise<void> {
  while ((await d.openLeases(keyId)) > 0) await new Promise((r) => setTimeout(r, 25));
}
