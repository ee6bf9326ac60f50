/**
 * The commands docs/operations.md prints run as printed and print what it shows: the keys
 * commands of "Keys" (each plan, each comment's promise) and `tintype usage` of "Reading
 * usage" in every format, against the table, CSV header and JSON fields the page shows. Only
 * the placeholders are filled in (YYYY-MM, ID, a key id) and the data directory is the test's.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { runTintype } from '../policy/process.ts';
import { blocksIn, readPage } from './markdown.ts';
import { expand, parseLine } from './synopsis.ts';

const PAGE = readPage('docs/operations.md');
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'tintype-docs-ops-'));
const env = { TINTYPE_DATA_DIR: dataDir };
t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));

/** `bin/tintype <args>` as the page prints it, run here. */
function run(words: string[]): ReturnType<typeof runTintype> {
  if (words[0] !== 'bin/tintype') throw new Error(`not a tintype command: ${words.join(' ')}`);
  return runTintype(words.slice(1), env);
}

const month = new Date().toISOString().slice(0, 7);
const made: string[] = [];

t.test('Keys: each printed line runs, and prints what its comment says', async (t) => {
  const [block] = blocksIn(PAGE, 'Keys', 'sh');
  const lines = block!.split('\n').map(parseLine);
  t.same(lines.map((l) => l.words.slice(0, 3).join(' ')), ['bin/tintype keys create', 'bin/tintype keys list', 'bin/tintype keys revoke']);
  const [create, list, revoke] = lines as [ReturnType<typeof parseLine>, ReturnType<typeof parseLine>, ReturnType<typeof parseLine>];

  const labels = /^prints (.*)$/.exec(create.comment)![1]!.split(', ');
  const variants = expand(create.words);
  t.same(variants.map((v) => v[v.indexOf('--plan') + 1]), ['free', 'starter', 'pro', 'scale'], 'one key per plan the synopsis names');
  for (const words of variants) {
    const r = await run(words);
    t.equal(r.code, 0, words.join(' '));
    const printed = r.stdout.trim().split('\n').map((l) => l.slice(0, l.indexOf(':')));
    t.same(printed, labels, `prints ${labels.join(', ')}`);
    t.match(r.stdout, new RegExp(`^plan: ${words[words.indexOf('--plan') + 1]}$`, 'm'));
    t.match(r.stdout, /^name: build bot$/m);
    t.match(r.stdout, /^secret: sk_[A-Za-z0-9_-]{43}$/m, 'a secret is sk_ and 43 base64url characters');
    const id = /^id: (\S+)$/m.exec(r.stdout)?.[1];
    if (id !== undefined) made.push(id);
  }

  const listed = await run(expand(list.words)[0]!);
  t.equal(listed.code, 0, 'keys list');
  const columns = list.comment.split(';')[0]!.split(', ');
  t.same(listed.stdout.split('\n')[0]!.split('\t'), columns, `tab-separated: ${columns.join(', ')}`);
  t.notMatch(listed.stdout, /sk_/, 'never a secret');
  for (const id of made) t.match(listed.stdout, new RegExp(`^${id}\\t`, 'm'), `${id} listed`);

  t.match(revoke.comment, /exit 1 when there is no such active key/);
  const absent = await run(expand(revoke.words)[0]!);
  t.equal(absent.code, 1, `${revoke.words.join(' ')} as printed: no such key, exit 1`);
  const revoked = await run(['bin/tintype', 'keys', 'revoke', made.at(-1)!]);
  t.equal(revoked.code, 0, 'an active key is revoked');
  t.equal((await run(['bin/tintype', 'keys', 'revoke', made.at(-1)!])).code, 1, 'and is no longer active');
});

t.test('Reading usage: each format prints what the page shows', async (t) => {
  const [block] = blocksIn(PAGE, 'Reading usage', 'sh');
  const variants = expand(parseLine(block!.trim()).words).map((w) => w.map((x) => (x === 'YYYY-MM' ? month : x === 'ID' ? made[0]! : x)));
  t.same(variants.map((v) => v.at(-1)), ['table', 'csv', 'json'], 'one run per format');
  const out = new Map<string, string>();
  for (const words of variants) {
    const r = await run(words);
    t.equal(r.code, 0, words.join(' '));
    out.set(words.at(-1)!, r.stdout);
  }
  // Every key of the month too, as without --key.
  t.equal((await run(['bin/tintype', 'usage'])).code, 0, 'with no option: this month, every key');

  const shown = blocksIn(PAGE, 'Reading usage', '');
  const [table, csv] = shown as [string, string];
  const tableHeads = (text: string): string[] => text.split('\n').filter((l) => /^(key|metered calls) /.test(l)).map((l) => l.trim().split(/\s{2,}/).join(' | '));
  t.same(tableHeads(out.get('table')!), tableHeads(table).slice(0, 2), 'the table: the same columns as shown');
  t.match(out.get('table')!, new RegExp(`^Usage for ${month} \\(UTC, \\S+ to \\S+\\): 1 key\\n`), 'the table: its first line as shown');
  t.match(table, /^Usage for \d{4}-\d{2} \(UTC, \S+ to \S+\): 2 keys\n/);

  t.equal(out.get('csv')!.split('\r\n')[0], csv.split('\n')[0], 'the CSV header row, column for column');
  t.match(out.get('csv')!, /\r\n$/, 'CRLF line ends');

  const [json] = blocksIn(PAGE, 'Reading usage', 'json');
  const documented = JSON.parse(json!) as { keys: Array<Record<string, unknown>>; totals: Record<string, unknown> };
  const printed = JSON.parse(out.get('json')!) as typeof documented;
  t.same(Object.keys(printed).sort(), Object.keys(documented).sort(), 'the document: its fields');
  t.same(Object.keys(printed.keys[0]!), Object.keys(documented.keys[0]!), 'a key: the fields shown, in order');
  for (const field of Object.keys(documented.totals).filter((f) => f !== '...')) t.ok(field in printed.totals, `totals.${field}`);
});

t.test('Reading usage: a bad --month is one line on stderr and exit status 2, nothing on stdout', async (t) => {
  const r = await run(['bin/tintype', 'usage', '--month', '2026-13']);
  t.equal(r.code, 2);
  t.equal(r.stdout, '');
  t.equal(r.stderr.trim().split('\n').length, 1);
  t.match(PAGE, 'A bad `--month` (`2026-13`)');
});
