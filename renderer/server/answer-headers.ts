/**
 * The headers of spec 2.1 the renderer sets on the 200 of a render operation, named once for the
 * routes that set them and the OpenAPI document that describes them.
 */

/** `hit` or `miss`: whether anything was rendered for this call. */
export const CACHE_HEADER = 'x-cache';
/** Sub-resource connections the guard refused during the live render. */
export const BLOCKED_HEADER = 'x-render-blocked';
/** `cache-control` of screenshot, html-to-image and pdf. */
export const RENDER_CACHE_CONTROL = 'no-store';
/** `cache-control` of og. */
export const OG_CACHE_CONTROL = 'private, max-age=86400';
