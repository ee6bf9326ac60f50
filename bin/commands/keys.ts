/**
 * `tintype keys create --plan P [--name N]` / `list` / `revoke ID` (docs/architecture.md §1). `create`
 * prints the secret once; nothing else ever shows it. Wiring only: the work is in policy/keys.ts.
 */
import { parseArgs } from 'node:util';
import { loadConfig } from '../../lib/config.ts';
import { createKey, listKeys, revokeKey } from '../../policy/keys.ts';
import { loadPlans } from '../../policy/plans.ts';
import { openStore } from '../../policy/store/open.ts';
import type { Command } from './command.ts';

const USAGE = 'usage: tintype keys create --plan P [--name N] | list | revoke ID';

export const keysCommand: Command = {
  summary: 'key admin: create --plan P | list | revoke ID',
  async run(args) {
    const [action, ...rest] = args;
    if (action !== 'create' && action !== 'list' && action !== 'revoke') {
      process.stderr.write(USAGE + '\n');
      return 2;
    }
    const { values, positionals } = parseArgs({
      args: rest,
      options: { plan: { type: 'string' }, name: { type: 'string' } },
      allowPositionals: true,
    });
    const config = loadConfig();
    const plans = loadPlans(config.plansFile);
    const store = openStore(config, { shortLived: true });
    try {
      await store.migrate();
      if (action === 'create') {
        if (values.plan === undefined || positionals.length > 0) {
          process.stderr.write(`${USAGE}\nplans: ${Object.keys(plans).join(', ')}\n`);
          return 2;
        }
        const k = await createKey(store, plans, { plan: values.plan, name: values.name });
        process.stdout.write(`id: ${k.id}\nplan: ${k.plan}\nname: ${k.name}\nsecret: ${k.secret}\n`);
        process.stderr.write('The secret is shown once and never stored: keep it now.\n');
        return 0;
      }
      if (action === 'list') {
        process.stdout.write('id\tname\tplan\tcreated\trevoked\n');
        for (const k of await listKeys(store)) {
          const revoked = k.revokedAt === null ? '-' : new Date(k.revokedAt).toISOString();
          process.stdout.write(`${k.id}\t${k.name || '-'}\t${k.plan}\t${new Date(k.createdAt).toISOString()}\t${revoked}\n`);
        }
        return 0;
      }
      const id = positionals[0];
      if (id === undefined || positionals.length !== 1) {
        process.stderr.write(USAGE + '\n');
        return 2;
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
