/**
 * A command line as a page prints it, made runnable: shell words (quotes kept together), a
 * trailing `# comment` apart, optional `[…]` groups taken, and `a|b|c` alternatives each run.
 */

export interface PrintedCommand {
  /** The words, with `[` `]` and alternatives still in them. */
  words: string[];
  /** What the page says after `#`, or ''. */
  comment: string;
}

/** Splits one printed line (no pipes, no substitutions) into its words and its comment. */
export function parseLine(line: string): PrintedCommand {
  const words: string[] = [];
  let word: string | null = null;
  let quote: string | null = null;
  let i = 0;
  for (; i < line.length; i++) {
    const c = line[i]!;
    if (quote !== null) {
      if (c === quote) quote = null;
      else word += c;
    } else if (c === '"' || c === "'") {
      quote = c;
      word ??= '';
    } else if (c === '#' && word === null) break;
    else if (/\s/.test(c)) {
      if (word !== null) words.push(word);
      word = null;
    } else word = (word ?? '') + c;
  }
  if (quote !== null) throw new Error(`unclosed quote in: ${line}`);
  if (word !== null) words.push(word);
  return { words, comment: line.slice(i + 1).trim() };
}

/**
 * Every command line the printed one stands for: optional groups taken (`[--name "build bot"]`
 * is `--name`, `build bot`), and one line per alternative of each `a|b|c` word, the others kept
 * at their first.
 */
export function expand(words: string[]): string[][] {
  const flat = words.map((w) => w.replace(/^\[|\]$/g, ''));
  const choices = flat.map((w) => (w.includes('|') && !w.startsWith('-') ? w.split('|') : [w]));
  const first = choices.map((o) => o[0]!);
  const lines: string[][] = [first];
  choices.forEach((options, at) => {
    for (const option of options.slice(1)) lines.push(first.map((w, i) => (i === at ? option : w)));
  });
  return uniq(lines);
}

function uniq(lines: string[][]): string[][] {
  const seen = new Set<string>();
  return lines.filter((l) => !seen.has(JSON.stringify(l)) && seen.add(JSON.stringify(l)) !== undefined);
}

/** Joins shell lines continued with a trailing backslash. */
export function joinContinuations(block: string): string[] {
  return block.replace(/\\\n\s*/g, '').split('\n').filter((l) => l.trim() !== '');
}
