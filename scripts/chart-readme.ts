/**
 * `node --import tsx scripts/chart-readme.ts`: writes charts/tintype/README.md from the chart's
 * values.yaml (each value, its default and the comment above it) and values.schema.json (the
 * description of a value with no comment of its own), so the README never says other than the
 * values do. test/chart/readme.test.ts fails while the README is not what this makes.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { isMap, parse, parseDocument, type Pair, type YAMLMap } from 'yaml';

const CHART = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../charts/tintype');

interface Row { name: string; value: unknown; comment: string | undefined; leaf: boolean }

/** The last paragraph of a comment (the file's own header stays above the first value), on one line. */
function oneLine(comment: string | undefined | null): string | undefined {
  if (!comment) return undefined;
  const paragraphs = comment.split(/\n\s*\n/);
  const text = paragraphs[paragraphs.length - 1]!.split('\n').map((l) => l.trim()).join(' ').trim();
  return text === '' ? undefined : text;
}

function rows(map: YAMLMap, at: string, out: Row[]): Row[] {
  map.items.forEach((item, i) => {
    const pair = item as Pair<{ value: unknown; commentBefore?: string | null }, unknown>;
    const name = at ? `${at}.${String(pair.key.value)}` : String(pair.key.value);
    // A map's first key's comment is kept on the map itself.
    const comment = oneLine(pair.key.commentBefore ?? (i === 0 ? map.commentBefore : undefined));
    const nested = isMap(pair.value) && pair.value.items.length > 0;
    out.push({ name, value: nested ? undefined : (pair.value as { toJSON(): unknown } | null)?.toJSON?.() ?? null, comment, leaf: !nested });
    if (nested) rows(pair.value as YAMLMap, name, out);
  });
  return out;
}

function description(schema: any, name: string): string | undefined { // eslint-disable-line @typescript-eslint/no-explicit-any
  let at = schema;
  for (const part of name.split('.')) at = at?.properties?.[part];
  return at?.description;
}

/** Text for a table cell: pipes escaped, and `<…>` outside code spans kept from reading as HTML. */
const cell = (s: string): string => s.split('`').map((part, i) => (i % 2 === 1 ? part : part.replaceAll('<', '&lt;'))).join('`').replaceAll('|', '\\|');

function shown(value: unknown): string {
  const json = JSON.stringify(value);
  return json.length > 60 ? '(see values.yaml)' : `\`${cell(json)}\``;
}

/** The README's text. */
export function chartReadme(): string {
  const chart = parse(readFileSync(path.join(CHART, 'Chart.yaml'), 'utf8')) as { version: string; appVersion: string; description: string };
  const schema = JSON.parse(readFileSync(path.join(CHART, 'values.schema.json'), 'utf8')) as unknown;
  const doc = parseDocument(readFileSync(path.join(CHART, 'values.yaml'), 'utf8'));
  const all = rows(doc.contents as YAMLMap, '', []);
  const out = [
    '# The tintype chart',
    '',
    `${chart.description} Chart ${chart.version}, tintype ${chart.appVersion}.`,
    '',
    'How to install, upgrade, scale and answer its alerts: [docs/helm.md](../../docs/helm.md); what each',
    'version changed and what an upgrade needs: [UPGRADING.md](UPGRADING.md).',
    '',
    'Generated from `values.yaml` and `values.schema.json` by `node --import tsx scripts/chart-readme.ts`',
    '(`test/chart/readme.test.ts` fails while it is out of date): change those, not this file.',
    '',
    '## Values',
  ];
  for (const top of all.filter((r) => !r.name.includes('.'))) {
    out.push('', `### \`${top.name}\``, '');
    if (top.comment) out.push(cell(top.comment), '');
    const under = all.filter((r) => r.name === top.name || r.name.startsWith(`${top.name}.`));
    out.push('| value | default | what it does |', '|---|---|---|');
    for (const r of under) {
      // A section's own comment is above its table.
      if (!r.leaf && (r.comment === undefined || r.name === top.name)) continue;
      const what = r.comment ?? description(schema, r.name) ?? '';
      out.push(`| \`${r.name}\` | ${r.leaf ? shown(r.value) : ''} | ${cell(what)} |`);
    }
  }
  return `${out.join('\n')}\n`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(path.join(CHART, 'README.md'), chartReadme());
}
