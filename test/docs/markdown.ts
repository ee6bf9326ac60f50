/**
 * What the docs tests read in the repository's Markdown: headings and the anchors GitHub gives
 * them, relative links, and the shell blocks a page shows. Plain text, no Markdown library: the
 * pages use only ATX headings, inline links and fenced blocks.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** The pages a reader is sent to: README.md and every docs/*.md, as repository paths. */
export const PAGES = ['README.md', 'docs/api.md', 'docs/architecture.md', 'docs/decisions.md', 'docs/helm.md', 'docs/operations.md', 'docs/performance.md', 'docs/security.md'];

export function readPage(page: string): string {
  return readFileSync(path.join(ROOT, page), 'utf8');
}

/** The lines of a page outside fenced blocks, with their 1-based numbers. */
function proseLines(text: string): Array<[number, string]> {
  const out: Array<[number, string]> = [];
  let fence = false;
  text.split('\n').forEach((line, i) => {
    if (/^\s*```/.test(line)) fence = !fence;
    else if (!fence) out.push([i + 1, line]);
  });
  return out;
}

/** The heading texts of a page, in order, as written (inline code marks kept). */
export function headings(text: string): string[] {
  return proseLines(text).flatMap(([, line]) => {
    const m = /^#{1,6} +(.*?) *#*$/.exec(line);
    return m === null ? [] : [m[1]!];
  });
}

/**
 * The anchor GitHub gives a heading: lower case, every character that is not a letter, a digit,
 * a space, `-` or `_` dropped, spaces made `-`.
 */
export function slug(heading: string): string {
  const text = heading.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1');
  return text.toLowerCase().replace(/[^\p{L}\p{N}\p{M} _-]/gu, '').replace(/ /g, '-');
}

/** Every anchor of a page: each heading's slug, a repeated one suffixed -1, -2, … as GitHub does. */
export function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const h of headings(text)) {
    const base = slug(h);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

export interface Link {
  line: number;
  target: string;
}

/** The inline links of a page's prose (not in fenced blocks or code spans), external ones included. */
export function links(text: string): Link[] {
  const out: Link[] = [];
  for (const [line, raw] of proseLines(text)) {
    const prose = raw.replace(/`[^`]*`/g, (code) => ' '.repeat(code.length));
    for (const m of prose.matchAll(/\]\(([^)\s]+)(?: "[^"]*")?\)/g)) out.push({ line, target: m[1]! });
  }
  return out;
}

/**
 * Where a link leads, checked against the repository: a broken file or anchor as one line of
 * text, or null when it holds. `from` is the repository path of the file the link is in; a
 * target starting with `/`-less `docs/` or `README.md` from a file outside Markdown (NOTES.txt,
 * an alert, --help) is taken from the repository root by passing `from` as ''.
 */
export function checkLink(from: string, target: string, read: (page: string) => string | undefined = tryRead): string | null {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return null;
  const [file, anchor] = target.split('#', 2) as [string, string | undefined];
  const page = file === '' ? from : path.posix.normalize(path.posix.join(path.posix.dirname(from === '' ? 'x' : from), file));
  const text = read(page);
  if (text === undefined) return `${target}: no file ${page}`;
  if (anchor === undefined || anchor === '') return null;
  if (!page.endsWith('.md')) return `${target}: an anchor into a file that is not Markdown`;
  if (!anchors(text).has(anchor)) return `${target}: ${page} has no heading with the anchor #${anchor}`;
  return null;
}

function tryRead(page: string): string | undefined {
  try {
    return readFileSync(path.join(ROOT, page), 'utf8');
  } catch {
    return undefined;
  }
}

/** The fenced blocks of one language in a page's section (from its heading to the next of the same or a higher level). */
export function blocksIn(text: string, heading: string, lang: string): string[] {
  const lines = text.split('\n');
  const start = lines.findIndex((l) => new RegExp(`^#{1,6} +${escape(heading)} *$`).test(l));
  if (start < 0) throw new Error(`no heading "${heading}"`);
  const level = /^#+/.exec(lines[start]!)![0].length;
  const out: string[] = [];
  let fence: string | null = null;
  let block: string[] = [];
  for (const line of lines.slice(start + 1)) {
    if (fence === null) {
      const m = /^#+ /.exec(line);
      if (m !== null && m[0].length - 1 <= level) break;
      if (line.startsWith('```')) {
        fence = line.slice(3).trim();
        block = [];
      }
    } else if (line === '```') {
      if (fence === lang) out.push(block.join('\n'));
      fence = null;
    } else block.push(line);
  }
  return out;
}

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
