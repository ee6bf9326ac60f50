/**
 * Field builders shared by the request schemas (spec Part 4.2 to 4.4). yup coerces by
 * default ("12" → 12, "true" → true); the spec wants real JSON types except where it says
 * otherwise (4.3 rule 1), so every builder here undoes yup's coercion and states its own.
 * Messages never echo the value: a value may be a URL or HTML (docs/architecture.md §6).
 */
import { boolean, number, string } from 'yup';

export const WAIT_UNTIL = ['load', 'domcontentloaded', 'networkidle'] as const;
export type WaitUntil = (typeof WAIT_UNTIL)[number];
/** Spec 4.2 to 4.4: `waitUntil` when omitted. */
export const WAIT_UNTIL_DEFAULT: WaitUntil = 'load';

/** Spec Part 8: `url` 1 to 2048 characters. */
export const URL_MIN = 1;
export const URL_MAX = 2048;
/** Spec Part 8: `html` 1 to 1,000,000 UTF-16 code units (String#length counts those). */
export const HTML_MIN = 1;
export const HTML_MAX = 1_000_000;
/** Spec Part 8: width and height 1 to 2000; scale factor 1 to 2. */
export const DIMENSION_MIN = 1;
export const DIMENSION_MAX = 2000;
export const SCALE_MIN = 1;
export const SCALE_MAX = 2;
/** Spec 4.2 and 4.3: the viewport when `width`, `height` or `deviceScaleFactor` is omitted. */
export const VIEWPORT_DEFAULTS = { width: 1280, height: 800, deviceScaleFactor: 1 } as const;
/** Spec Part 8: a `fullPage` capture is clipped at this height, in CSS px. */
export const FULL_PAGE_MAX_HEIGHT = 8000;

/** A string of digits with an optional decimal part, taken as its number where spec 4.3 rule 1 allows it. */
export const DIGITS = /^[0-9]+(\.[0-9]+)?$/;

/** Keeps the value as the caller sent it, so a string is not taken for a number or boolean. */
const asSent = (_value: unknown, original: unknown): unknown => original;

/** Accepts a string of digits (optionally with a decimal part) as its number (spec 4.3 rule 1). */
const digitsToNumber = (_value: unknown, original: unknown): unknown =>
  typeof original === 'string' && DIGITS.test(original) ? Number(original) : original;

/** A JSON number; `coerceDigits` also takes a string of digits. */
export function realNumber(coerceDigits = false) {
  return number()
    .transform(coerceDigits ? digitsToNumber : asSent)
    .typeError(coerceDigits ? '${path} must be a number or a string of digits' : '${path} must be a number');
}

/** An optional JSON integer in [min, max] with no default. */
export function optionalInteger(min: number, max: number, coerceDigits = false) {
  return realNumber(coerceDigits)
    .integer('${path} must be a whole number')
    .min(min, '${path} must be at least ${min}')
    .max(max, '${path} must be at most ${max}');
}

/** A JSON integer in [min, max], `fallback` when omitted. */
export function integerIn(min: number, max: number, fallback: number, coerceDigits = false) {
  return optionalInteger(min, max, coerceDigits).default(fallback);
}

/** A JSON number in [min, max]. */
export function numberIn(min: number, max: number, fallback: number, coerceDigits = false) {
  return realNumber(coerceDigits)
    .min(min, '${path} must be at least ${min}')
    .max(max, '${path} must be at most ${max}')
    .default(fallback);
}

/** A real JSON boolean: the strings "true" and "false" fail (spec 4.3, `omitBackground`). */
export function realBoolean(fallback: boolean) {
  return boolean().transform(asSent).typeError('${path} must be a boolean (true or false)').default(fallback);
}

/** A JSON string; never coerced from a number. */
export function realString() {
  return string().transform(asSent).typeError('${path} must be a string');
}

/** One of a fixed set of strings. */
export function oneOfStrings<T extends string>(values: readonly T[], fallback: T) {
  return realString()
    .oneOf(values as T[], `\${path} must be one of ${values.join(', ')}`)
    .default(fallback);
}

/** `waitUntil` of spec 4.2 to 4.4, default `load`. */
export function waitUntil() {
  return oneOfStrings(WAIT_UNTIL, WAIT_UNTIL_DEFAULT);
}

/**
 * `url`: 1 to 2048 characters and an absolute address. Scheme, credentials, host and addresses
 * are the guard's to judge (422 `url_rejected`), never the validator's: `file:///etc/passwd`
 * passes here and is refused as `bad_scheme` (spec Part 1 rule 6, Part 7).
 */
export function pageUrl() {
  return realString()
    .min(URL_MIN, '${path} must be at least ${min} character long')
    .max(URL_MAX, '${path} must be at most ${max} characters long')
    .test('absolute', '${path} must be an absolute URL', (v) => v === undefined || v === '' || URL.canParse(v));
}

/** `html`: 1 to 1,000,000 UTF-16 code units. */
export function markup() {
  return realString()
    .min(HTML_MIN, '${path} must be at least ${min} character long')
    .max(HTML_MAX, '${path} must be at most ${max} characters long (UTF-16 code units)');
}
