/**
 * The Open Graph card's parameters (spec 4.5 table): which template draws which text field,
 * the ceilings in characters (code points) and what each template requires.
 */

export const TEMPLATES = ['title', 'stat', 'board'] as const;
export type Template = (typeof TEMPLATES)[number];

export const THEMES = ['dark', 'light'] as const;
export type Theme = (typeof THEMES)[number];
/** Spec 4.5: the theme when `theme` is omitted. */
export const THEME_DEFAULT: Theme = 'dark';

/** The text fields, in the order the spec's table lists them (and errors are reported). */
export const TEXT_FIELDS = [
  'title',
  'subtitle',
  'kicker',
  'statValue',
  'statLabel',
  'start',
  'target',
  'hint',
  'footer',
  'brand',
] as const;
export type TextField = (typeof TEXT_FIELDS)[number];

/** Ceiling of each text field in characters after cleaning (spec 4.5 table, Part 8). */
export const CEILINGS: Readonly<Record<TextField, number>> = {
  title: 120,
  subtitle: 160,
  kicker: 40,
  statValue: 6,
  statLabel: 60,
  start: 12,
  target: 12,
  hint: 60,
  footer: 40,
  brand: 40,
};

/** The text fields each template draws (spec 4.5 table, "Drawn by"). */
export const DRAWS: Readonly<Record<Template, readonly TextField[]>> = {
  title: ['title', 'subtitle', 'kicker', 'footer', 'brand'],
  stat: ['title', 'kicker', 'statValue', 'statLabel', 'footer', 'brand'],
  board: ['title', 'subtitle', 'start', 'target', 'hint', 'footer', 'brand'],
};

/** The text fields each template requires (spec 4.5 table, "Required"). */
export const REQUIRES: Readonly<Record<Template, readonly TextField[]>> = {
  title: ['title'],
  stat: ['title', 'statValue', 'statLabel'],
  board: ['title', 'start', 'target'],
};

/** Every parameter the query may carry; anything else is refused (spec 4.5 rules 3 and 7). */
export const PARAMETERS: readonly string[] = ['template', 'theme', ...TEXT_FIELDS];

/** A validated card: cleaned text, theme defaulted. Absent optional fields are left out. */
export type OgCard = { template: Template; theme: Theme } & Partial<Record<TextField, string>> & {
  title: string;
};
