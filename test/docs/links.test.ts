/**
 * Every link a reader follows lands on a page and a heading that exist (GitHub's anchors): the
 * relative links of README.md and docs/*.md, the docs/ links NOTES.txt prints, each alert's
 * runbook_url as the chart renders it, the links in --help, and the citations in code
 * (`docs/<page>.md "Section"`, `README "Section"`, `docs/architecture.md §N`), which name a
 * heading by its text.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { commands } from '../../bin/commands/index.ts';
import { ofKind, render } from '../helm.ts';
import { anchors, checkLink, headings, links, PAGES, readPage, ROOT, slug } from './markdown.ts';

t.test('anchors are the ones GitHub makes', async (t) => {
  t.equal(slug("Chromium's walls"), 'chromiums-walls');
  t.equal(slug('Reading `kubectl get rp`'), 'reading-kubectl-get-rp');
  t.equal(slug('The edge (`tintype start`, `envoy/`)'), 'the-edge-tintype-start-envoy');
  t.equal(slug('Policy: keys, plans, limits and the usage ledger'), 'policy-keys-plans-limits-and-the-usage-ledger');
  t.equal(slug('1. Roles'), '1-roles');
  t.same([...anchors('# A\n## A\n```\n# not a heading\n```\n### A\n')], ['a', 'a-1', 'a-2']);
});

t.test('the checker finds a missing page, a missing anchor and a moved section', async (t) => {
  const pages: Record<string, string> = { 'README.md': '# tintype\n## Quick start\n', 'docs/api.md': '# API\n## Errors\n' };
  const read = (p: string): string | undefined => pages[p];
  t.equal(checkLink('README.md', 'docs/api.md#errors', read), null);
  t.equal(checkLink('docs/api.md', '../README.md#quick-start', read), null);
  t.equal(checkLink('docs/api.md', '#errors', read), null);
  t.equal(checkLink('README.md', 'https://example.com/#whatever', read), null);
  t.match(checkLink('README.md', 'docs/helm.md', read), /no file docs\/helm\.md/);
  t.match(checkLink('README.md', 'docs/api.md#caching', read), /has no heading with the anchor #caching/);
  t.match(checkLink('README.md', '#reading-usage', read), /README\.md has no heading/);
  t.match(checkLink('', 'docs/api.md#nowhere', read), /docs\/api\.md has no heading/);
  t.same(links('See [a](docs/api.md#errors), `[not](a-link.md)` and\n```\n[nor](this.md)\n```\n[b](#x "title").').map((l) => l.target), ['docs/api.md#errors', '#x']);
});

t.test('README.md and docs/*.md: every relative link and anchor holds', async (t) => {
  const onDisk = readdirMarkdown();
  t.same(onDisk, [...PAGES].sort(), 'the pages checked are every page there is');
  for (const page of PAGES) {
    const broken = links(readPage(page)).flatMap((l) => {
      const why = checkLink(page, l.target);
      return why === null ? [] : [`${page}:${l.line}: ${why}`];
    });
    t.same(broken, [], `${page}: no broken link`);
  }
});

t.test('each page of docs/ says first whom it is for', async (t) => {
  for (const page of PAGES.filter((p) => p.startsWith('docs/') && p !== 'docs/architecture.md')) {
    const first = readPage(page).split('\n\n')[1] ?? '';
    t.match(first, /^For /, `${page}: its first paragraph starts "For …"`);
  }
});

t.test('README is a front door: at most about 250 lines, and every page of docs/ is one click away', async (t) => {
  const readme = readPage('README.md');
  t.ok(readme.split('\n').length <= 250, `README.md has ${readme.split('\n').length} lines`);
  const linked = new Set(links(readme).map((l) => l.target.split('#')[0]));
  for (const page of PAGES.filter((p) => p.startsWith('docs/'))) t.ok(linked.has(page), `README links ${page}`);
});

t.test("NOTES.txt: the docs/ links it prints", async (t) => {
  const notes = readFileSync(path.join(ROOT, 'charts/tintype/templates/NOTES.txt'), 'utf8');
  const targets = [...notes.matchAll(/\b((?:docs\/[a-z-]+\.md|README\.md)(?:#[a-z0-9_-]+)?)/g)].map((m) => m[1]!);
  t.ok(targets.length > 0, 'NOTES.txt points into the docs');
  for (const target of targets) t.equal(checkLink('', target), null, `NOTES.txt: ${target}`);
});

t.test("each alert's runbook_url is its section of docs/helm.md", async (t) => {
  const base = 'https://git.example.com/platform/tintype/-/blob/main/';
  for (const extra of [[], ['--set', 'monitoring.prometheusRule.runbookBaseUrl=']]) {
    const [rule] = ofKind(await render('monitoring-values.yaml', extra), 'PrometheusRule');
    const rules = (rule!['spec'] as { groups: Array<{ rules: Array<{ alert: string; annotations: Record<string, string> }> }> }).groups.flatMap((g) => g.rules);
    t.ok(rules.length > 0, 'alerts rendered');
    for (const r of rules) {
      const url = r.annotations['runbook_url'] ?? '';
      const target = extra.length === 0 ? url.slice(base.length) : url;
      if (extra.length === 0) t.ok(url.startsWith(base), `${r.alert}: under runbookBaseUrl`);
      t.equal(target, `docs/helm.md#${r.alert.toLowerCase()}`, `${r.alert}: its own section`);
      t.equal(checkLink('', target), null, `${r.alert}: ${target} exists`);
    }
  }
});

t.test('--help: the docs/ links each command prints', async (t) => {
  for (const name of Object.keys(commands)) {
    const help = (await commands[name]!.load()).help;
    const targets = [...help.matchAll(/\b(docs\/[a-z-]+\.md(?:#[a-z0-9_-]+)?)/g)].map((m) => m[1]!);
    t.ok(targets.length > 0, `${name}: --help names where its settings are`);
    for (const target of targets) t.equal(checkLink('', target), null, `tintype ${name} --help: ${target}`);
  }
});

t.test('citations in code, tests, the chart and scripts name a heading that exists', async (t) => {
  // test/docs/ is left out: its own examples of broken links are broken on purpose.
  const files = execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' })
    .split('\0')
    .filter((f) => f !== '' && !f.endsWith('.md') && !f.startsWith('test/chart/golden/') && !f.startsWith('test/docs/') && f !== 'package-lock.json' && /\.(ts|js|yaml|yml|json|txt|sh|tpl)$|^\.ci\/|^bin\/tintype$|^Dockerfile$/.test(f));
  const headingsOf = new Map(PAGES.map((p) => [p, new Set(headings(readPage(p)).map(plain))]));
  const sections = new Map(PAGES.map((p) => [p, new Set(headings(readPage(p)).flatMap((h) => /^(\d+)\./.exec(h)?.[1] ?? []))]));
  let cited = 0;
  const broken: string[] = [];
  for (const file of files) {
    // A citation may wrap onto the next comment line: fold the comment marks away first.
    const text = readFileSync(path.join(ROOT, file), 'utf8').replace(/\n\s*(?:\*|\/\/|#)\s*/g, ' ');
    for (const m of text.matchAll(/\b(README|docs\/[a-z-]+\.md),? "([^"]+)"/g)) {
      const page = m[1] === 'README' ? 'README.md' : m[1]!;
      cited++;
      if (!headingsOf.has(page)) broken.push(`${file}: ${m[0]}: no page ${page}`);
      else if (!headingsOf.get(page)!.has(plain(m[2]!))) broken.push(`${file}: ${m[0]}: ${page} has no heading "${m[2]}"`);
    }
    for (const m of text.matchAll(/\bdocs\/architecture\.md,? §(\d+)/g)) {
      cited++;
      if (!sections.get('docs/architecture.md')!.has(m[1]!)) broken.push(`${file}: ${m[0]}: no section ${m[1]}`);
    }
    for (const m of text.matchAll(/\b(docs\/[a-z-]+\.md#[a-z0-9_-]+)/g)) {
      cited++;
      const why = checkLink('', m[1]!);
      if (why !== null) broken.push(`${file}: ${why}`);
    }
  }
  t.ok(cited > 100, `${cited} citations read`);
  t.same(broken, [], 'every citation names a heading that exists');
});

/** A heading or a cited section name without inline code marks, for comparing the two. */
function plain(s: string): string {
  return s.replace(/`/g, '').trim();
}

function readdirMarkdown(): string[] {
  return execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', 'README.md', 'docs/*.md'], { cwd: ROOT, encoding: 'utf8' })
    .split('\n')
    .filter((f) => f !== '')
    .sort();
}
