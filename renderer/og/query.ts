/**
 * Validation of the `GET /v1/og` query (spec 4.5 rules 1-3 and 7): every failing parameter is
 * reported by path in one 400 (spec Part 7), nothing is silently dropped.
 */
import { ValidationFailure, type FieldIssue } from '../../lib/errors.ts';
import { characterCount, cleanText, hasPrintable } from './clean.ts';
import {
  CEILINGS,
  DRAWS,
  PARAMETERS,
  REQUIRES,
  TEMPLATES,
  TEXT_FIELDS,
  THEMES,
  THEME_DEFAULT,
  type OgCard,
  type Template,
  type TextField,
  type Theme,
} from './fields.ts';

// An unknown parameter's name is echoed as its path; bound it so a hostile name stays short.
const MAX_ECHOED_NAME = 64;

function echoedName(name: string): string {
  const cleaned = cleanText(name);
  const chars = [...cleaned];
  return chars.length > MAX_ECHOED_NAME ? `${chars.slice(0, MAX_ECHOED_NAME).join('')}…` : cleaned;
}

function isOneOf<T extends string>(list: readonly T[], value: string): value is T {
  return (list as readonly string[]).includes(value);
}

/**
 * Parses and validates the query of `GET /v1/og`. Throws ValidationFailure naming every failing
 * parameter; returns the card with cleaned text and the theme defaulted to `dark`.
 */
export function parseOgQuery(search: URLSearchParams): OgCard {
  const issues: FieldIssue[] = [];
  const values = new Map<string, string>();
  const repeated = new Set<string>();
  const unknown = new Set<string>();

  for (const [name, value] of search) {
    if (!PARAMETERS.includes(name)) {
      unknown.add(name);
    } else if (values.has(name)) {
      repeated.add(name);
    } else {
      values.set(name, value);
    }
  }
  for (const name of unknown) {
    const path = echoedName(name);
    // Rule 7: a key is only ever accepted in the authorization header, never as a parameter.
    const message =
      name === 'api_key'
        ? 'api_key is not accepted in the query; send the key in the authorization header'
        : path === ''
          ? 'a parameter with no name is not accepted'
          : `${path} is not a parameter of /v1/og`;
    issues.push({ path, message });
  }
  for (const name of repeated) issues.push({ path: name, message: `${name} must be given once` });

  let template: Template | undefined;
  const rawTemplate = repeated.has('template') ? undefined : values.get('template');
  if (rawTemplate === undefined) {
    if (!repeated.has('template')) {
      issues.push({ path: 'template', message: 'template is required: title, stat or board' });
    }
  } else if (isOneOf(TEMPLATES, rawTemplate)) {
    template = rawTemplate;
  } else {
    issues.push({ path: 'template', message: 'template must be one of title, stat, board' });
  }

  let theme: Theme = THEME_DEFAULT;
  const rawTheme = values.get('theme');
  if (rawTheme !== undefined && !repeated.has('theme')) {
    if (isOneOf(THEMES, rawTheme)) theme = rawTheme;
    else issues.push({ path: 'theme', message: 'theme must be one of dark, light' });
  }

  const text: Partial<Record<TextField, string>> = {};
  for (const field of TEXT_FIELDS) {
    if (repeated.has(field)) continue;
    const raw = values.get(field);
    if (raw === undefined) {
      if (template !== undefined && REQUIRES[template].includes(field)) {
        issues.push({ path: field, message: `template=${template} requires ${field}` });
      }
      continue;
    }
    if (template !== undefined && !DRAWS[template].includes(field)) {
      issues.push({ path: field, message: `template=${template} does not draw ${field}` });
      continue;
    }
    const cleaned = cleanText(raw);
    if (!hasPrintable(cleaned)) {
      issues.push({ path: field, message: `${field} must hold at least one printable character` });
    } else if (characterCount(cleaned) > CEILINGS[field]) {
      issues.push({ path: field, message: `${field} must be at most ${CEILINGS[field]} characters` });
    } else {
      text[field] = cleaned;
    }
  }

  if (issues.length > 0 || template === undefined || text.title === undefined) {
    throw new ValidationFailure(issues);
  }
  return { ...text, template, theme, title: text.title };
}
