/**
 * `tintype keys create --plan P [--name N]` / `list` / `revoke ID` (docs/architecture.md §1). `create`
 * prints the secret once; nothing else ever shows it. `list` adds each key's metered calls and
 * remaining quota this UTC month, the figures `tintype usage` reports. Wiring only: the work is
 * in policy/keys.ts and policy/usage-*.ts.
 */
import { generateKeyPairSync } from 'node:crypto';
import { parseArgs } from 'node:util';
import { leaseKeyText } from '../../lib/lease.ts';
import { loadConfig } from '../../lib/config.ts';
import { monthOf } from '../../policy/calendar.ts';
import { createKey, listKeys, revokeKey, setKeyEgress } from '../../policy/keys.ts';
import { loadPlans } from '../../policy/plans.ts';
import { openStore } from '../../policy/store/open.ts';
import { openUsageReader, readUsage } from '../../policy/usage-reader.ts';
import { CommandLineError, helpText, type Command } from './command.ts';
import { type EgressPolicy, EgressPolicyError, egressText, parseEgressPolicy } from '../../lib/egress.ts';

const USAGE = 'usage: tintype keys create --plan P [--name N] [--egress-allow LIST [--egress-mode M]] | list | revoke ID | egress ID (--allow LIST [--mode M] | --clear) | lease-keypair';

/** The policy the options name, or undefined for none; a bad list or mode is a CommandLineError. */
function egressOption(allow: string | undefined, mode: string | undefined, flags: { allow: string; mode: string }): EgressPolicy | undefined {
  if (allow === undefined) {
    if (mode !== undefined) throw new CommandLineError(`${flags.mode} needs ${flags.allow}`);
    return undefined;
  }
  try {
    return parseEgressPolicy(allow, mode ?? 'enforce');
  } catch (err) {
    throw err instanceof EgressPolicyError ? new CommandLineError(`${flags.allow}: ${err.message}`) : err;
  }
}

/** A new lease key pair, as the settings take them (docs/architecture.md §4). */
function leaseKeypair(): string {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return `TINTYPE_LEASE_SIGNING_KEY=${leaseKeyText(privateKey)}\nTINTYPE_LEASE_PUBLIC_KEYS=${leaseKeyText(publicKey)}\n`;
}

export const keysCommand: Command = {
  help: helpText({
    synopsis: [
      'tintype keys create --plan P [--name N] [--egress-allow LIST [--egress-mode enforce|report]]',
      'tintype keys list',
      'tintype keys revoke ID',
      'tintype keys egress ID --allow LIST [--mode enforce|report]',
      'tintype keys egress ID --clear',
      'tintype keys lease-keypair',
    ],
    about: 'create prints the new key\'s id, plan, name and secret; the secret is shown once and only its hash is stored. ' +
      'list prints, tab-separated: id, name, plan, created, revoked, and this UTC month\'s metered calls and remaining quota ' +
      '(as tintype usage reports them); never a secret. revoke refuses the key from its next request; exit 1 when there is no ' +
      'such active key. egress sets a key\'s egress policy (host patterns its renders may reach: example.com, *.example.com for any name ' +
      'below it; at most 64) or clears it; list shows it as mode:patterns. It holds for renders that start after it, within a second ' +
      'on every policy replica (docs/security.md#egress-policy-per-key). Works while policy runs. lease-keypair prints a new Ed25519 key pair for signed leases as two settings: ' +
      'TINTYPE_LEASE_SIGNING_KEY for policy only, TINTYPE_LEASE_PUBLIC_KEYS for policy and every renderer (add a new public key everywhere before policy signs with its private key).',
    options: [
      ['--plan P', 'create: the plan (free, starter, pro, scale, or one of TINTYPE_PLANS)'],
      ['--name N', 'create: a name, at most 100 printable ASCII characters'],
      ['--egress-allow LIST', 'create: comma-separated host patterns the key\'s renders may reach'],
      ['--egress-mode M', 'create: enforce (default: refuse the rest) or report (fetch it, record would_refuse)'],
      ['--allow LIST', 'egress: the new list (replaces the old)'],
      ['--mode M', 'egress: enforce (default) or report'],
      ['--clear', 'egress: no policy any more (the key behaves as one that never had one)'],
    ],
    settings: ['DATABASE_URL', 'TINTYPE_COUNTERS_URL', 'TINTYPE_DATA_DIR', 'TINTYPE_PG_POOL', 'TINTYPE_SQLITE_SYNC', 'TINTYPE_MIGRATE', 'TINTYPE_PLANS'],
  }),
  async run(args) {
    const [action, ...rest] = args;
    if (action === 'lease-keypair' && rest.length === 0) {
      process.stdout.write(leaseKeypair());
      process.stderr.write('The signing key mints leases: give it to policy only.\n');
      return 0;
    }
    if (action !== 'create' && action !== 'list' && action !== 'revoke' && action !== 'egress') {
      process.stderr.write(USAGE + '\n');
      return 2;
    }
    const { values, positionals } = parseArgs({
      args: rest,
      options: {
        plan: { type: 'string' }, name: { type: 'string' },
        ...(action === 'create' ? { 'egress-allow': { type: 'string' }, 'egress-mode': { type: 'string' } } as const : {}),
        ...(action === 'egress' ? { allow: { type: 'string' }, mode: { type: 'string' }, clear: { type: 'boolean' } } as const : {}),
      },
      allowPositionals: true,
    });
    // Bad lists are refused before the store is opened: nothing changes.
    const opt = values as Record<string, string | boolean | undefined>;
    const str = (name: string): string | undefined => (typeof opt[name] === 'string' ? (opt[name] as string) : undefined);
    const created = action === 'create' ? egressOption(str('egress-allow'), str('egress-mode'), { allow: '--egress-allow', mode: '--egress-mode' }) : undefined;
    const changed = action === 'egress' && opt.clear !== true ? egressOption(str('allow'), str('mode'), { allow: '--allow', mode: '--mode' }) : undefined;
    if (action === 'egress' && (opt.clear === true) === (str('allow') !== undefined || str('mode') !== undefined)) {
      throw new CommandLineError('keys egress ID needs --allow LIST [--mode M], or --clear alone');
    }
    const config = loadConfig();
    const plans = loadPlans(config.plansFile);
    const store = openStore(config, { shortLived: true });
    try {
      // In a policy pod (TINTYPE_MIGRATE=wait) the credentials may have no DDL rights: the
      // schema is `tintype migrate`'s to apply, and this only checks it is there.
      if (config.migrate === 'wait') {
        const pending = await store.pendingMigrations();
        if (pending.length > 0) {
          process.stderr.write(`the schema is not migrated yet (pending ${pending.join(', ')}): run tintype migrate first\n`);
          return 1;
        }
      } else {
        await store.migrate();
      }
      if (action === 'create') {
        if (values.plan === undefined || positionals.length > 0) {
          process.stderr.write(`${USAGE}\nplans: ${Object.keys(plans).join(', ')}\n`);
          return 2;
        }
        const k = await createKey(store, plans, { plan: values.plan, name: values.name });
        if (created !== undefined) await setKeyEgress(store, k.id, created);
        const egress = created === undefined ? '' : `egress: ${egressText(created)}\n`;
        process.stdout.write(`id: ${k.id}\nplan: ${k.plan}\nname: ${k.name}\n${egress}secret: ${k.secret}\n`);
        process.stderr.write('The secret is shown once and never stored: keep it now.\n');
        return 0;
      }
      if (action === 'list') {
        const keys = await listKeys(store);
        const reader = openUsageReader(config);
        const month = await readUsage(reader, plans, monthOf(Date.now()), { everyKey: true }).finally(() => reader.close());
        const figures = new Map(month.keys.map((k) => [k.keyId, k]));
        const policies = (await store.egress.policies()).byKey;
        const lines = ['id\tname\tplan\tcreated\trevoked\tmetered\tremaining\tegress'];
        for (const k of keys) {
          const revoked = k.revokedAt === null ? '-' : new Date(k.revokedAt).toISOString();
          const f = figures.get(k.id);
          const egress = policies.get(k.id);
          lines.push(`${k.id}\t${k.name || '-'}\t${k.plan}\t${new Date(k.createdAt).toISOString()}\t${revoked}\t${f?.metered ?? 0}\t${f?.remaining ?? '-'}\t${egress === undefined ? '-' : egressText(egress)}`);
        }
        process.stdout.write(lines.join('\n') + '\n');
        return 0;
      }
      const id = positionals[0];
      if (id === undefined || positionals.length !== 1) {
        process.stderr.write(USAGE + '\n');
        return 2;
      }
      if (action === 'egress') {
        if (!(await setKeyEgress(store, id, changed))) {
          process.stderr.write(`no key ${id}\n`);
          return 1;
        }
        process.stdout.write(changed === undefined ? `egress of ${id}: none\n` : `egress of ${id}: ${egressText(changed)}\n`);
        return 0;
      }
      if (!(await revokeKey(store, id))) {
        process.stderr.write(`no active key ${id}\n`);
        return 1;
      }
      process.stdout.write(`revoked ${id}\n`);
      return 0;
    } finally {
      await store.close();
    }
  },
};
