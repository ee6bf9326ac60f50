/**
 * The SQLite state is readable by the service's user alone (docs/operations.md, "Files and modes"): the data
 * directory 0700, `policy.sqlite` and its -wal and -shm files 0600, whatever the umask; a
 * directory and files left with wider modes by an older version are narrowed when opened.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import Database from '../../policy/store/sqlite-driver.ts';
import { createKey } from '../../policy/keys.ts';
import { BUILT_IN_PLANS } from '../../policy/plans.ts';
import { openSqliteStore } from '../../policy/store/sqlite.ts';

const modeOf = (p: string): string => (statSync(p).mode & 0o777).toString(8);

// The usual umask: without care, directories would be 0755 and files 0644.
const umask = process.umask(0o022);
t.teardown(() => process.umask(umask));
const root = mkdtempSync(path.join(os.tmpdir(), 'tintype-modes-'));
t.teardown(() => rmSync(root, { recursive: true, force: true }));

t.test('a new data directory is 0700; policy.sqlite, -wal and -shm are 0600', async (t) => {
  const dir = path.join(root, 'fresh', 'data');
  const store = openSqliteStore({ dataDir: dir, backgroundCheckpoints: false });
  t.teardown(() => store.close());
  await store.migrate();
  await createKey(store, BUILT_IN_PLANS, { plan: 'free', now: Date.now() });
  const db = path.join(dir, 'policy.sqlite');
  t.equal(modeOf(dir), '700', 'data directory');
  for (const file of [db, `${db}-wal`, `${db}-shm`]) t.equal(modeOf(file), '600', path.basename(file));
});

t.test('state an older version left readable is narrowed when the store opens', async (t) => {
  const dir = path.join(root, 'old');
  mkdirSync(dir, { mode: 0o755 });
  chmodSync(dir, 0o755);
  const db = path.join(dir, 'policy.sqlite');
  // An older store left open: a database in WAL mode whose -wal and -shm still exist.
  const old = new Database(db);
  old.pragma('journal_mode = WAL');
  old.exec('CREATE TABLE t (x)');
  for (const file of [db, `${db}-wal`, `${db}-shm`]) chmodSync(file, 0o644);
  const store = openSqliteStore({ dataDir: dir, backgroundCheckpoints: false });
  t.teardown(() => store.close());
  old.close();
  await store.migrate();
  t.equal(modeOf(dir), '700', 'data directory');
  for (const file of [db, `${db}-wal`, `${db}-shm`]) t.equal(modeOf(file), '600', path.basename(file));
});

t.test('an existing file of another name in the directory is left alone', async (t) => {
  const dir = path.join(root, 'shared');
  mkdirSync(dir);
  writeFileSync(path.join(dir, 'README'), 'operator notes');
  chmodSync(path.join(dir, 'README'), 0o644);
  const store = openSqliteStore({ dataDir: dir, backgroundCheckpoints: false });
  t.teardown(() => store.close());
  t.equal(modeOf(path.join(dir, 'README')), '644');
});
