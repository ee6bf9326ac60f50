/** The POST /v1/pdf body (spec 4.4). Real JSON types only; exactly one of `url` and `html`. */
import { object, type InferType } from 'yup';
import { markup, numberIn, oneOfStrings, pageUrl, realBoolean, realString, waitUntil } from './fields.ts';

export const PDF_FORMATS = ['Letter', 'Legal', 'Tabloid', 'Ledger', 'A0', 'A1', 'A2', 'A3', 'A4', 'A5', 'A6'] as const;
export type PdfFormat = (typeof PDF_FORMATS)[number];
export const MEDIA = ['print', 'screen'] as const;
export const MARGIN_SIDES = ['top', 'right', 'bottom', 'left'] as const;
export const PAGE_RANGES_MAX = 40;

/** Up to three digits, an optional decimal part, then px, in, cm or mm (spec 4.4 `margin`). */
export const MARGIN_LENGTH = /^\d{1,3}(\.\d+)?(px|in|cm|mm)$/;
export const PAGE_RANGES = /^[0-9, -]*$/;
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
  format: oneOfStrings(PDF_FORMATS, 'A4'),
  landscape: realBoolean(false),
  printBackground: realBoolean(true),
  scale: numberIn(0.1, 2, 1),
  margin: object({ top: length(), right: length(), bottom: length(), left: length() })
    .typeError('${path} must be an object with keys top, right, bottom, left')
    .default(undefined),
  pageRanges: realString()
    .max(PAGE_RANGES_MAX, '${path} must be at most ${max} characters long')
    .matches(PAGE_RANGES, { message: '${path} may hold only digits, commas, hyphens and spaces', excludeEmptyString: true }),
  preferCSSPageSize: realBoolean(false),
  media: oneOfStrings(MEDIA, 'print'),
  waitUntil: waitUntil(),
});

export type PdfRequest = InferType<typeof pdfSchema>;
