/** The POST /v1/pdf body (spec 4.4). Real JSON types only; exactly one of `url` and `html`. */
import { object, type InferType } from 'yup';
import { WAIT_UNTIL_DEFAULT, markup, numberIn, oneOfStrings, pageUrl, realBoolean, realString, waitUntil } from './fields.ts';

export const PDF_FORMATS = ['Letter', 'Legal', 'Tabloid', 'Ledger', 'A0', 'A1', 'A2', 'A3', 'A4', 'A5', 'A6'] as const;
export type PdfFormat = (typeof PDF_FORMATS)[number];
export const MEDIA = ['print', 'screen'] as const;
export const MARGIN_SIDES = ['top', 'right', 'bottom', 'left'] as const;
/** Spec 4.4: `pageRanges` at most 40 characters; `scale` 0.1 to 2. */
export const PAGE_RANGES_MAX = 40;
export const PDF_SCALE_MIN = 0.1;
export const PDF_SCALE_MAX = 2;

/** Up to three digits, an optional decimal part, then px, in, cm or mm (spec 4.4 `margin`). */
export const MARGIN_LENGTH = /^[0-9]{1,3}(\.[0-9]+)?(px|in|cm|mm)$/;
/** Digits, commas, hyphens and spaces only (spec 4.4 `pageRanges`). */
export const PAGE_RANGES = /^[0-9, -]*$/;

/** Spec 4.4: the value of each omitted field that has one. */
export const PDF_DEFAULTS = {
  format: 'A4',
  landscape: false,
  printBackground: true,
  scale: 1,
  preferCSSPageSize: false,
  media: 'print',
  waitUntil: WAIT_UNTIL_DEFAULT,
} as const;
export const EXACTLY_ONE = 'give exactly one of `url` or `html`';

const length = () =>
  realString().matches(MARGIN_LENGTH, {
    message: '${path} must be up to three digits, an optional decimal part, then px, in, cm or mm',
    excludeEmptyString: false,
  });

export const pdfSchema = object({
  url: pageUrl().test('exactly-one', EXACTLY_ONE, function exactlyOne(v) {
    return (v === undefined) !== (this.parent.html === undefined);
  }),
  html: markup(),
  format: oneOfStrings(PDF_FORMATS, PDF_DEFAULTS.format),
  landscape: realBoolean(PDF_DEFAULTS.landscape),
  printBackground: realBoolean(PDF_DEFAULTS.printBackground),
  scale: numberIn(PDF_SCALE_MIN, PDF_SCALE_MAX, PDF_DEFAULTS.scale),
  margin: object({ top: length(), right: length(), bottom: length(), left: length() })
    .typeError('${path} must be an object with keys top, right, bottom, left')
    .default(undefined),
  pageRanges: realString()
    .max(PAGE_RANGES_MAX, '${path} must be at most ${max} characters long')
    .matches(PAGE_RANGES, { message: '${path} may hold only digits, commas, hyphens and spaces', excludeEmptyString: true }),
  preferCSSPageSize: realBoolean(PDF_DEFAULTS.preferCSSPageSize),
  media: oneOfStrings(MEDIA, PDF_DEFAULTS.media),
  waitUntil: waitUntil(),
});

export type PdfRequest = InferType<typeof pdfSchema>;
