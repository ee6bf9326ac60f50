/**
 * The POST /v1/html-to-image body (spec 4.3). Rule 1: width, height and deviceScaleFactor
 * take a string of digits; omitBackground must be a real boolean.
 */
import { object, type InferType } from 'yup';
import { DIMENSION_MAX, SCALE_MAX, integerIn, markup, numberIn, realBoolean, waitUntil } from './fields.ts';

export const htmlToImageSchema = object({
  html: markup().required('${path} is required'),
  width: integerIn(1, DIMENSION_MAX, 1280, true),
  height: integerIn(1, DIMENSION_MAX, 800, true),
  deviceScaleFactor: numberIn(1, SCALE_MAX, 1, true),
  omitBackground: realBoolean(false),
  waitUntil: waitUntil(),
});

export type HtmlToImageRequest = InferType<typeof htmlToImageSchema>;
