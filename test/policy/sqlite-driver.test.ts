// The SQLite driver of policy/store/sqlite-driver.ts: better-sqlite3 13, the one driver, on the
// checkout's Node (README "Node"). A process that drops prepared statements to the collector while
// awaits and stream reads drive its loop must end on its own: better-sqlite3 12 on Node 24 aborts
// it (exit 134) within a few rounds; docs/helm.md "The images".
import t from 'tap';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const DRIVER = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../policy/store/sqlite-driver.ts');

const CHURN = `
  import { Readable } from 'node:stream';
  const { default: Database } = await import(${JSON.stringify(DRIVER)});
  const db = new Database(':memory:');
  db.exec('CREATE TABLE t (a INTEGER, b TEXT)');
  for (let round = 0; round < 20; round++) {
    for (let i = 0; i < 500; i++) db.prepare('INSERT INTO t VALUES (' + i + ', ?)').run('r' + round);
    for await (const chunk of Readable.from(Array.from({ length: 200 }, (_, i) => Buffer.alloc(1024, i)))) {
      db.prepare('SELECT count(*) AS n FROM t WHERE a = ?').get(chunk[0]);
    }
    db.exec('DELETE FROM t');
  }
  db.close();
  process.stdout.write('ok');
`;

t.test('one driver, better-sqlite3 13, on a Node its engines accept', async (t) => {
  const { sqliteDriverPath } = await import(DRIVER);
  // The entry point is lib/index.js in the package.
  const { version } = JSON.parse(readFileSync(path.join(sqliteDriverPath, '../../package.json'), 'utf8')) as { version: string };
  t.equal(Number(version.split('.')[0]), 13, `better-sqlite3 ${version} on Node ${process.versions.node}`);
  t.ok(Number(process.versions.node.split('.')[0]) >= 22, 'Node 22 or later, as package.json\'s engines say');
  const lock = JSON.parse(readFileSync(path.join(DRIVER, '../../../package-lock.json'), 'utf8')) as { packages: Record<string, { name?: string }> };
  const drivers = Object.entries(lock.packages).filter(([where, p]) => /(^|\/)node_modules\/better-sqlite3[^/]*$/.test(where) || p.name === 'better-sqlite3');
  t.same(drivers.map(([where]) => where), ['node_modules/better-sqlite3'], 'the lockfile holds one SQLite driver');
});

t.test('statements collected while the loop runs never abort the process', async (t) => {
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', CHURN], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (b: Buffer) => (out += b));
  child.stderr.on('data', (b: Buffer) => (err += b));
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.once('close', (c, s) => resolve([c, s])));
  t.same({ code, signal, out }, { code: 0, signal: null, out: 'ok' }, err.slice(-2000));
});
