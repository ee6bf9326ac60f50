/**
 * The mixed-version window of an upgrade and a rollback (docs/helm.md "Upgrade", "Rollback"):
 * the migration Job applies this revision's migrations while policy pods of the previous chart
 * revision still serve, and after `helm rollback` they serve alone on the newer schema. The
 * previous revision's code comes from git history (chart-history.ts) and runs for real against
 * PostgreSQL on 127.0.0.1:5432: its policy must answer keyed checks, for keys made before and
 * after the migration, on the schema the current migrations leave.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { EXT_AUTHZ_PREFIX } from '../../lib/policy-contract.ts';
import { ROOT } from '../helm.ts';
import { request } from '../policy/http.ts';
import { runTintype, startPolicyProcess } from '../policy/process.ts';
import { storeHome } from '../policy/stores.ts';
import { previousRevision } from './chart-history.ts';

const previous = previousRevision();

/**
 * The previous revision's checkout, its packages this one's (the same lock file or close to it):
 * each linked, and a package the previous revision named by an npm alias (`"x": "npm:y@…"`, as
 * its SQLite driver for Node 22 and later was) linked under that alias to this checkout's `y`.
 */
function checkout(commit: string): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tintype-previous-'));
  const tar = execFileSync('git', ['archive', '--format=tar', commit], { cwd: ROOT, maxBuffer: 512 * 1024 * 1024 });
  execFileSync('tar', ['-x', '-C', dir], { input: tar, maxBuffer: 512 * 1024 * 1024 });
  const ours = path.join(ROOT, 'node_modules');
  const theirs = path.join(dir, 'node_modules');
  mkdirSync(theirs);
  for (const name of readdirSync(ours)) symlinkSync(path.join(ours, name), path.join(theirs, name));
  const { dependencies } = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
  for (const [alias, spec] of Object.entries(dependencies)) {
    const aliased = /^npm:(@?[^@]+)@/.exec(spec)?.[1];
    if (aliased !== undefined && !existsSync(path.join(theirs, alias)) && existsSync(path.join(ours, aliased))) {
      symlinkSync(path.join(ours, aliased), path.join(theirs, alias));
    }
  }
  return dir;
}

t.test(`policy of ${previous.commit.slice(0, 12)} (chart ${previous.version}) serves on the schema this revision's migrations leave`, async (t) => {
  const dir = checkout(previous.commit);
  const home = await storeHome('postgres');
  t.teardown(() => home.drop());
  const key = async (name: string, launcher?: string) => {
    const made = await runTintype(['keys', 'create', '--plan', 'free', '--name', name], home.env, undefined, launcher);
    t.equal(made.code, 0, `keys create ${name}: ${made.code === 0 ? 'made' : made.stderr}`);
    return /^secret: (\S+)$/m.exec(made.stdout)![1]!;
  };
  const previousTintype = path.join(dir, 'bin/tintype');

  // The release as it ran: the previous revision migrated and made a key.
  t.equal((await runTintype(['migrate'], home.env, undefined, previousTintype)).code, 0, 'the previous revision migrates');
  const before = await key('before', previousTintype);
  // The upgrade's hook Job: this revision's migrations, while the previous pods serve.
  const applied = await runTintype(['migrate'], home.env);
  t.equal(applied.code, 0, applied.stderr);
  const after = await key('after');

  // Its policy pods (TINTYPE_MIGRATE=wait) during the window, and alone after a rollback.
  const policy = await startPolicyProcess({ ...home.env, TINTYPE_MIGRATE: 'wait' }, undefined, previousTintype);
  t.teardown(() => policy.kill('SIGTERM'));
  for (const [name, secret] of [['made before the migration', before], ['made after it', after]] as const) {
    const ok = await request(policy.port, 'GET', `${EXT_AUTHZ_PREFIX}/v1/ping`, { authorization: `Bearer ${secret}` });
    t.equal(ok.status, 200, `a key ${name} is granted`, { output: policy.output() });
  }
  const refused = await request(policy.port, 'GET', `${EXT_AUTHZ_PREFIX}/v1/ping`, { authorization: 'Bearer sk_not_a_key' });
  t.equal(refused.status, 401, 'an unknown key still refused');
  const ready = await fetch(`http://127.0.0.1:${policy.adminPort}/healthz/ready`);
  t.equal(ready.status, 200, 'ready on the newer schema');
});
