/** The POST /v1/screenshot body (spec 4.2). Real JSON types only; no coercion. */
import { object, type InferType } from 'yup';
import {
  DIMENSION_MAX,
  DIMENSION_MIN,
  SCALE_MAX,
  SCALE_MIN,
  VIEWPORT_DEFAULTS,
  WAIT_UNTIL_DEFAULT,
  integerIn,
  numberIn,
  oneOfStrings,
  optionalInteger,
  pageUrl,
  realBoolean,
  waitUntil,
} from './fields.ts';

export const IMAGE_FORMATS = ['png', 'jpeg'] as const;
/** Spec 4.2: JPEG `quality` 1 to 100. */
export const QUALITY_MIN = 1;
export const QUALITY_MAX = 100;

/** Spec 4.2: the value of each omitted field that has one. */
export const SCREENSHOT_DEFAULTS = {
  ...VIEWPORT_DEFAULTS,
  fullPage: false,
  waitUntil: WAIT_UNTIL_DEFAULT,
  omitBackground: false,
  format: 'png',
} as const;

export const screenshotSchema = object({
  url: pageUrl().required('${path} is required'),
  width: integerIn(DIMENSION_MIN, DIMENSION_MAX, SCREENSHOT_DEFAULTS.width),
  height: integerIn(DIMENSION_MIN, DIMENSION_MAX, SCREENSHOT_DEFAULTS.height),
  fullPage: realBoolean(SCREENSHOT_DEFAULTS.fullPage),
  deviceScaleFactor: numberIn(SCALE_MIN, SCALE_MAX, SCREENSHOT_DEFAULTS.deviceScaleFactor),
  waitUntil: waitUntil(),
  omitBackground: realBoolean(SCREENSHOT_DEFAULTS.omitBackground),
  format: oneOfStrings(IMAGE_FORMATS, SCREENSHOT_DEFAULTS.format),
  quality: optionalInteger(QUALITY_MIN, QUALITY_MAX).test(
    'jpeg-only',
    'quality applies to jpeg only',
    function jpegOnly(v) {
      return v === undefined || this.parent.format === 'jpeg';
    },
  ),
});

export type ScreenshotRequest = InferType<typeof screenshotSchema>;
