import t from 'tap';
import { ValidationFailure, type FieldIssue } from '../../../lib/errors.ts';
import { parseOgQuery } from '../../../renderer/og/query.ts';
import { cleanText, characterCount } from '../../../renderer/og/clean.ts';
import { ogCacheKey } from '../../../renderer/og/cache-key.ts';

function issuesOf(query: string | URLSearchParams): FieldIssue[] {
  const search = typeof query === 'string' ? new URLSearchParams(query) : query;
  try {
    parseOgQuery(search);
  } catch (err) {
    if (err instanceof ValidationFailure) return [...err.issues];
    throw err;
  }
  return [];
}

function q(params: Record<string, string>): URLSearchParams {
  return new URLSearchParams(params);
}

t.test('cleaning: spec 4.5 rule 1', async (t) => {
  const rows: [string, string, string][] = [
    ['tabs, newlines, CR become spaces and collapse', 'a\tb\nc\r\nd', 'a b c d'],
    ['whitespace runs collapse to one space', 'a    b  \u3000 c', 'a b c'],
    ['trimmed', '   ab  ', 'ab'],
    ['C0 removed', 'a\u0000b\u0007c\u001f', 'abc'],
    ['DEL and C1 removed', 'a\u007fb\u0080c\u009f', 'abc'],
    ['LRM and RLM removed', 'a\u200eb\u200fc', 'abc'],
    ['bidi embeddings and overrides removed', '\u202aa\u202bb\u202cc\u202dd\u202ee', 'abcde'],
    ['bidi isolates removed', '\u2066a\u2067b\u2068c\u2069', 'abc'],
    ['a control between spaces leaves one space', 'a \u0001 b', 'a b'],
    ['ZWJ inside an emoji sequence is kept', '👩\u200d💻', '👩\u200d💻'],
    ['combining marks are kept', 'e\u0301', 'e\u0301'],
  ];
  for (const [name, raw, want] of rows) t.equal(cleanText(raw), want, name);
});

t.test('characters are code points: an emoji is one character', async (t) => {
  t.equal(characterCount('😀'), 1);
  t.equal(characterCount('a😀b'), 3);
  t.equal(characterCount('𝔘'), 1);
});

t.test('a valid card per template, text cleaned, theme defaulted', async (t) => {
  t.same(parseOgQuery(q({ template: 'title', title: '  Hello\tworld ', kicker: 'News' })), {
    template: 'title',
    theme: 'dark',
    title: 'Hello world',
    kicker: 'News',
  });
  t.same(
    parseOgQuery(q({ template: 'stat', theme: 'light', title: 'T', statValue: '42%', statLabel: 'up' })),
    { template: 'stat', theme: 'light', title: 'T', statValue: '42%', statLabel: 'up' },
  );
  t.same(
    parseOgQuery(q({ template: 'board', title: 'T', start: 'e2', target: 'e4', hint: 'h', footer: 'f', brand: 'b' })),
    { template: 'board', theme: 'dark', title: 'T', start: 'e2', target: 'e4', hint: 'h', footer: 'f', brand: 'b' },
  );
});

t.test('template rules: does not draw / requires (spec 4.5 rule 3)', async (t) => {
  const rows: [string, Record<string, string>, FieldIssue[]][] = [
    ['title does not draw statValue', { template: 'title', title: 'T', statValue: '1' },
      [{ path: 'statValue', message: 'template=title does not draw statValue' }]],
    ['title does not draw statLabel', { template: 'title', title: 'T', statLabel: 'x' },
      [{ path: 'statLabel', message: 'template=title does not draw statLabel' }]],
    ['title does not draw start, target, hint', { template: 'title', title: 'T', start: 'a', target: 'b', hint: 'c' },
      [{ path: 'start', message: 'template=title does not draw start' },
       { path: 'target', message: 'template=title does not draw target' },
       { path: 'hint', message: 'template=title does not draw hint' }]],
    ['stat does not draw subtitle', { template: 'stat', title: 'T', statValue: '1', statLabel: 'l', subtitle: 's' },
      [{ path: 'subtitle', message: 'template=stat does not draw subtitle' }]],
    ['stat does not draw start/target/hint', { template: 'stat', title: 'T', statValue: '1', statLabel: 'l', start: 'a', target: 'b', hint: 'h' },
      [{ path: 'start', message: 'template=stat does not draw start' },
       { path: 'target', message: 'template=stat does not draw target' },
       { path: 'hint', message: 'template=stat does not draw hint' }]],
    ['board does not draw kicker, statValue, statLabel', { template: 'board', title: 'T', start: 'a', target: 'b', kicker: 'k', statValue: '1', statLabel: 'l' },
      [{ path: 'kicker', message: 'template=board does not draw kicker' },
       { path: 'statValue', message: 'template=board does not draw statValue' },
       { path: 'statLabel', message: 'template=board does not draw statLabel' }]],
    ['title requires title', { template: 'title' },
      [{ path: 'title', message: 'template=title requires title' }]],
    ['stat requires title, statValue, statLabel', { template: 'stat' },
      [{ path: 'title', message: 'template=stat requires title' },
       { path: 'statValue', message: 'template=stat requires statValue' },
       { path: 'statLabel', message: 'template=stat requires statLabel' }]],
    ['board requires title, start, target', { template: 'board' },
      [{ path: 'title', message: 'template=board requires title' },
       { path: 'start', message: 'template=board requires start' },
       { path: 'target', message: 'template=board requires target' }]],
  ];
  for (const [name, params, want] of rows) t.same(issuesOf(q(params)), want, name);
});

t.test('template and theme values', async (t) => {
  t.same(issuesOf('title=T'), [{ path: 'template', message: 'template is required: title, stat or board' }]);
  t.same(issuesOf('template=poster&title=T'), [{ path: 'template', message: 'template must be one of title, stat, board' }]);
  t.same(issuesOf('template=title&title=T&theme=blue'), [{ path: 'theme', message: 'theme must be one of dark, light' }]);
  t.same(issuesOf('template=title&title=T&theme='), [{ path: 'theme', message: 'theme must be one of dark, light' }]);
});

t.test('unknown and repeated parameters are refused, never dropped', async (t) => {
  t.same(issuesOf('template=title&title=T&color=red'), [{ path: 'color', message: 'color is not a parameter of /v1/og' }]);
  t.same(issuesOf('template=title&title=T&url=x&html=y'), [
    { path: 'url', message: 'url is not a parameter of /v1/og' },
    { path: 'html', message: 'html is not a parameter of /v1/og' },
  ]);
  const key = issuesOf('template=title&title=T&api_key=sk_secret123');
  t.same(key, [{ path: 'api_key', message: 'api_key is not accepted in the query; send the key in the authorization header' }]);
  t.notMatch(JSON.stringify(key), /sk_secret123/, 'the key value is never echoed');
  t.same(issuesOf('template=title&title=A&title=B'), [{ path: 'title', message: 'title must be given once' }]);
  t.same(issuesOf('template=title&template=stat&title=A'), [{ path: 'template', message: 'template must be given once' }]);
  t.same(issuesOf('template=title&title=T&=x'), [{ path: '', message: 'a parameter with no name is not accepted' }]);
  const long = 'x'.repeat(500);
  const [issue] = issuesOf(`template=title&title=T&${long}=1`);
  t.ok(issue !== undefined && [...issue.path].length <= 65, 'a hostile unknown name is echoed bounded');
});

t.test('every failing field is listed in one report', async (t) => {
  const issues = issuesOf(q({ template: 'stat', subtitle: 's', statValue: '1234567', kicker: '\u0001', extra: '1' }));
  t.same(issues.map((i) => i.path).sort(), ['extra', 'kicker', 'statLabel', 'statValue', 'subtitle', 'title'].sort());
  const answer = new ValidationFailure(issues).answer();
  t.equal(answer.status, 400);
  t.equal((answer.body as { success: boolean }).success, false);
});

t.test('a supplied field that cleans to nothing is refused (spec 4.5 rule 2)', async (t) => {
  // Default-ignorable characters draw nothing: ZWJ, ZWSP, soft hyphen, variation selectors, Hangul fillers.
  for (const raw of ['', '   ', '\t\n\r', '\u0000\u0001', '\u200e\u200f\u202a\u2066', '\u200d', '\u200b\u00ad', '\ufe0f', '\u{e0101}', '\u3164', '\u115f\u1160']) {
    t.same(issuesOf(q({ template: 'title', title: 'T', subtitle: raw })), [
      { path: 'subtitle', message: 'subtitle must hold at least one printable character' },
    ], JSON.stringify(raw));
  }
  t.same(issuesOf(q({ template: 'title', title: 'T', subtitle: '\u0301' })), [], 'a lone combining mark draws ink');
  t.same(issuesOf(q({ template: 'title', title: 'T', subtitle: '❤\ufe0f' })), [], 'a variation selector beside a symbol is fine');
  t.same(issuesOf(q({ template: 'title', title: ' ' })), [
    { path: 'title', message: 'title must hold at least one printable character' },
  ]);
});

t.test('ceilings at the limit and one over, in code points after cleaning', async (t) => {
  const fields: [string, number, Record<string, string>][] = [
    ['title', 120, { template: 'title' }],
    ['subtitle', 160, { template: 'title', title: 'T' }],
    ['kicker', 40, { template: 'title', title: 'T' }],
    ['statValue', 6, { template: 'stat', title: 'T', statLabel: 'l' }],
    ['statLabel', 60, { template: 'stat', title: 'T', statValue: '1' }],
    ['start', 12, { template: 'board', title: 'T', target: 'b' }],
    ['target', 12, { template: 'board', title: 'T', start: 'a' }],
    ['hint', 60, { template: 'board', title: 'T', start: 'a', target: 'b' }],
    ['footer', 40, { template: 'title', title: 'T' }],
    ['brand', 40, { template: 'title', title: 'T' }],
  ];
  for (const [field, max, base] of fields) {
    for (const unit of ['a', '😀', '𝔘', '世']) {
      const at = unit.repeat(max);
      t.same(issuesOf(q({ ...base, [field]: at })), [], `${field} at ${max} × ${unit}`);
      t.same(issuesOf(q({ ...base, [field]: at + unit })), [
        { path: field, message: `${field} must be at most ${max} characters` },
      ], `${field} at ${max + 1} × ${unit}`);
    }
    // Counted after cleaning: surrounding and repeated whitespace does not count.
    t.same(issuesOf(q({ ...base, [field]: `  ${'b'.repeat(max)}\t\n ` })), [], `${field} cleaned to ${max}`);
  }
});

t.test('cache key: identical parameters, order irrelevant, versioned', async (t) => {
  const a = parseOgQuery(new URLSearchParams('template=title&title=Hello&kicker=K'));
  const b = parseOgQuery(new URLSearchParams('kicker=K&title=Hello&template=title&theme=dark'));
  const c = parseOgQuery(new URLSearchParams('template=title&title=Hello%20%20&kicker=K'));
  const d = parseOgQuery(new URLSearchParams('template=title&title=Hello&kicker=K&theme=light'));
  const e = parseOgQuery(new URLSearchParams('template=title&title=Hello&footer=K'));
  t.match(ogCacheKey(a), /^og:v\d+:[0-9a-f]{64}$/);
  t.equal(ogCacheKey(a), ogCacheKey(b), 'field order and the defaulted theme do not matter');
  t.equal(ogCacheKey(a), ogCacheKey(c), 'keyed on cleaned text');
  t.not(ogCacheKey(a), ogCacheKey(d), 'theme matters');
  t.not(ogCacheKey(a), ogCacheKey(e), 'the field a value is in matters');
});

t.test('ceilings count code points of the cleaned text, not graphemes or UTF-16 units', async (t) => {
  const base = { template: 'title', title: 'T' };
  // A ZWJ sequence is one picture but three code points (woman, ZWJ, laptop).
  const coder = '👩\u200d💻';
  t.same(issuesOf(q({ ...base, kicker: coder.repeat(13) + 'a' })), [], '13 × 3 + 1 = 40 code points');
  t.same(issuesOf(q({ ...base, kicker: coder.repeat(13) + 'ab' })), [
    { path: 'kicker', message: 'kicker must be at most 40 characters' },
  ], '41 code points');
  // A combining mark is a code point of its own.
  t.same(issuesOf(q({ ...base, kicker: 'e\u0301'.repeat(20) })), [], '20 × (e + acute) = 40');
  t.same(issuesOf(q({ ...base, kicker: 'e\u0301'.repeat(20) + 'e' })), [
    { path: 'kicker', message: 'kicker must be at most 40 characters' },
  ], '41 with the marks counted');
  // Removed controls and collapsed whitespace are not counted.
  const padded = `${'a'.repeat(20)}\u200e\u202e\u2066\u0085\u007f${'a'.repeat(20)}`;
  t.same(issuesOf(q({ ...base, kicker: padded })), [], 'controls inside are removed before counting');
  t.same(issuesOf(q({ ...base, kicker: `${'a'.repeat(19)}\t\n\r  ${'a'.repeat(20)}` })), [], 'a whitespace run counts as one space');
  t.same(issuesOf(q({ ...base, kicker: `${'a'.repeat(20)}\t\n\r  ${'a'.repeat(20)}` })), [
    { path: 'kicker', message: 'kicker must be at most 40 characters' },
  ], '20 + 1 + 20 = 41');
  t.same(parseOgQuery(q({ ...base, kicker: padded })).kicker, 'a'.repeat(40), 'the card carries the cleaned text');
});

t.test('every parameter given twice is refused by name', async (t) => {
  const all = ['theme', 'title', 'subtitle', 'kicker', 'footer', 'brand'];
  for (const name of all) {
    const search = new URLSearchParams({ template: 'title', title: 'T' });
    search.set(name, name === 'theme' ? 'dark' : 'x');
    search.append(name, name === 'theme' ? 'light' : 'y');
    t.same(issuesOf(search), [{ path: name, message: `${name} must be given once` }], name);
  }
});

t.test('with an unknown template the text fields are still checked', async (t) => {
  t.same(issuesOf(q({ template: 'poster', title: 'x'.repeat(121), kicker: ' ' })), [
    { path: 'template', message: 'template must be one of title, stat, board' },
    { path: 'title', message: 'title must be at most 120 characters' },
    { path: 'kicker', message: 'kicker must hold at least one printable character' },
  ]);
});

t.test('the 400 body names every failing field by path (spec Part 7)', async (t) => {
  let failure: unknown;
  try {
    parseOgQuery(q({ template: 'board', title: 'T', kicker: 'k', hint: '\u0000' }));
  } catch (err) {
    failure = err;
  }
  t.ok(failure instanceof ValidationFailure);
  const answer = (failure as ValidationFailure).answer();
  t.equal(answer.status, 400);
  const body = answer.body as { success: boolean; error: { message: string; issues: FieldIssue[] } };
  t.equal(body.success, false);
  t.same(body.error.issues.map((i) => i.path), ['kicker', 'start', 'target', 'hint']);
  for (const word of ['template=board does not draw kicker', 'template=board requires start', 'template=board requires target', 'hint must hold at least one printable character']) {
    t.match(body.error.message, word);
  }
});
