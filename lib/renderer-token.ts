/**
 * The token renderers present to policy's renderer listener (claim, release, settle, the egress
 * audit; docs/security.md "The meter's walls"): only the renderer container holds it (the chart's
 * Secret key `TINTYPE_RENDERER_TOKEN`; in `tintype start`, one made at start), so a peer without
 * it (the browser container beside the renderer, any other pod) is refused on its headers, before
 * policy reads a byte of its body.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

/** The header it travels in, as `Bearer <token>`. */
export const RENDERER_TOKEN_HEADER = 'authorization';

/** The form of a token: 32 to 256 URL-safe characters. */
export const RENDERER_TOKEN_FORM = /^[A-Za-z0-9_.~+/=-]{32,256}$/;

/** A fresh token: 32 random bytes, base64url. */
export function newRendererToken(): string {
  return randomBytes(32).toString('base64url');
}

/** The header a renderer sends. */
export function rendererTokenHeaders(token: string | undefined): Record<string, string> {
  return token === undefined ? {} : { [RENDERER_TOKEN_HEADER]: `Bearer ${token}` };
}

/** Whether `headers` carry `token`, compared in constant time. */
export function carriesRendererToken(headers: IncomingHttpHeaders, token: string): boolean {
  const value = headers[RENDERER_TOKEN_HEADER];
  if (typeof value !== 'string' || !value.startsWith('Bearer ')) return false;
  const digest = (s: string): Buffer => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(value.slice(7)), digest(token));
}
