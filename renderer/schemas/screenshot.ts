/** The POST /v1/screenshot body (spec 4.2). Real JSON types only; no coercion. */
import { object, type InferType } from 'yup';
import { DIMENSION_MAX, SCALE_MAX, integerIn, numberIn, oneOfStrings, optionalInteger, pageUrl, realBoolean, waitUntil } from './fields.ts';

export const IMAGE_FORMATS = ['png', 'jpeg'] as const;

export const screenshotSchema = object({
  url: pageUrl().required('${path} is required'),
  width: integerIn(1, DIMENSION_MAX, 1280),
  height: integerIn(1, DIMENSION_MAX, 800),
  fullPage: realBoolean(false),
  deviceScaleFactor: numberIn(1, SCALE_MAX, 1),
  waitUntil: waitUntil(),
  omitBackground: realBoolean(false),
  format: oneOfStrings(IMAGE_FORMATS, 'png'),
  quality: optionalInteger(1, 100).test(
    'jpeg-only',
    'quality applies to jpeg only',
    function jpegOnly(v) {
      return v === undefined || this.parent.format === 'jpeg';
    },
  ),
});

export type ScreenshotRequest = InferType<typeof screenshotSchema>;
