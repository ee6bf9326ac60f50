/**
 * The subcommand table of docs/architecture.md §1: each command's one-line summary, and its
 * module, loaded only when that command runs, so a command does not pay for the libraries of
 * the others (`tintype usage` loads neither Chromium's driver nor Kubernetes' client). Wiring only.
 */
import type { Command } from './command.ts';

export interface CommandEntry {
  summary: string;
  load(): Promise<Command>;
}

export const commands: Record<string, CommandEntry> = {
  start: {
    summary: 'edge + policy + renderer + guard on one machine',
    load: async () => (await import('./start.ts')).startCommand,
  },
  policy: {
    summary: 'ext_authz and settle service for Envoy',
    load: async () => (await import('./policy.ts')).policyCommand,
  },
  renderer: {
    summary: 'the renderer server (screenshot, html-to-image, pdf, og) with its Chromium pool',
    load: async () => (await import('./renderer.ts')).rendererCommand,
  },
  guard: {
    summary: 'the egress guard (forward proxy) on its own',
    load: async () => (await import('./guard.ts')).guardCommand,
  },
  controller: {
    summary: 'the Kubernetes operator: scales RenderPools on render slots and reports their state',
    load: async () => (await import('./controller.ts')).controllerCommand,
  },
  'envoy-drain': {
    summary: "beside Envoy in its pod: drains it through its admin API when the pod goes",
    load: async () => (await import('./envoy-drain.ts')).envoyDrainCommand,
  },
  migrate: {
    summary: "applies policy's schema migrations (before a new version starts; --check)",
    load: async () => (await import('./migrate.ts')).migrateCommand,
  },
  keys: {
    summary: 'key admin: create --plan P | list | revoke ID | egress ID',
    load: async () => (await import('./keys.ts')).keysCommand,
  },
  usage: {
    summary: 'the usage ledger per key for one UTC month (table, csv, json)',
    load: async () => (await import('./usage.ts')).usageCommand,
  },
  egress: {
    summary: "a key's egress audit trail: the guard's decisions on its renders' fetches (table, csv, json)",
    load: async () => (await import('./egress.ts')).egressCommand,
  },
};
