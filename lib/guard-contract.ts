/**
 * What crosses between the renderer and the guard (docs/architecture.md §2, "guard").
 *
 * - Chromium talks to a relay on the renderer's side, never to the guard directly. The relay
 *   adds `Proxy-Authorization: Basic base64("render:<token>")` to each request head (absolute-form
 *   requests and CONNECT), naming the render that owns the connection. `<token>` is a fresh
 *   random value per render, so no render can name, see or change another's count.
 * - The guard refuses with `403` and `x-guard-reason: <reason>` (spec Part 7 `reason` vocabulary).
 * - When an allowed `http:` target cannot be reached, the guard answers the absolute-form request
 *   itself (502, or 504 on a timeout) with `x-guard-failure: <GuardFailure>`, so the renderer
 *   can tell that answer from one the target gave. Both headers are the guard's word alone: the
 *   guard drops them from every answer it forwards from a target.
 * - When a render ends, the renderer asks the guard for that render's tally with an origin-form
 *   `GET /renders/<token>` straight to the guard's listener (not through the proxy); the guard
 *   answers the tally as JSON and forgets it. Pages cannot reach that path: their requests
 *   arrive absolute-form and are judged as targets.
 */
import { randomBytes } from 'node:crypto';
import type { RejectReason } from './errors.ts';

export const GUARD_REASON_HEADER = 'x-guard-reason';
export const RENDER_STATS_PATH = '/renders/';
export const GUARD_FAILURE_HEADER = 'x-guard-failure';

/** Why the guard answered an allowed request itself: the target could not be reached or went quiet. */
export type GuardFailure = 'connect_refused' | 'connect_timeout' | 'reset' | 'idle_timeout' | 'unreachable';

/** A render's refusal tally, as the guard answers it at `GET /renders/<token>`. */
export interface RenderTally {
  /** Connections and requests the guard refused for this render. */
  blocked: number;
  /** The reason of the first refusal, if any. */
  firstReason: RejectReason | null;
}

/** A new unguessable render token. */
export function newRenderToken(): string {
  return randomBytes(18).toString('base64url');
}

/** The `Proxy-Authorization` value that names a render. */
export function renderAuthorization(token: string): string {
  return 'Basic ' + Buffer.from(`render:${token}`).toString('base64');
}

/** The render token named by a `Proxy-Authorization` value, or undefined when it names none. */
export function renderTokenFrom(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const m = /^Basic\s+([A-Za-z0-9+/=]+)$/i.exec(header.trim());
  if (m === null) return undefined;
  const decoded = Buffer.from(m[1]!, 'base64').toString('utf8');
  if (!decoded.startsWith('render:')) return undefined;
  const token = decoded.slice('render:'.length);
  return /^[A-Za-z0-9_-]{16,64}$/.test(token) ? token : undefined;
}
