/**
 * The POST /v1/html-to-image body (spec 4.3). Rule 1: width, height and deviceScaleFactor
 * take a string of digits; omitBackground must be a real boolean.
 */
import { object, type InferType } from 'yup';
import {
  DIMENSION_MAX,
  DIMENSION_MIN,
  SCALE_MAX,
  SCALE_MIN,
  VIEWPORT_DEFAULTS,
  WAIT_UNTIL_DEFAULT,
  integerIn,
  markup,
  numberIn,
  realBoolean,
  waitUntil,
} from './fields.ts';

/** Spec 4.3: the value of each omitted field that has one. */
export const HTML_TO_IMAGE_DEFAULTS = {
  ...VIEWPORT_DEFAULTS,
  omitBackground: false,
  waitUntil: WAIT_UNTIL_DEFAULT,
} as const;

export const htmlToImageSchema = object({
  html: markup().required('${path} is required'),
  width: integerIn(DIMENSION_MIN, DIMENSION_MAX, HTML_TO_IMAGE_DEFAULTS.width, true),
  height: integerIn(DIMENSION_MIN, DIMENSION_MAX, HTML_TO_IMAGE_DEFAULTS.height, true),
  deviceScaleFactor: numberIn(SCALE_MIN, SCALE_MAX, HTML_TO_IMAGE_DEFAULTS.deviceScaleFactor, true),
  omitBackground: realBoolean(HTML_TO_IMAGE_DEFAULTS.omitBackground),
  waitUntil: waitUntil(),
});

export type HtmlToImageRequest = InferType<typeof htmlToImageSchema>;
