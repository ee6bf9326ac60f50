/**
 * What crosses between the renderer and the guard (docs/architecture.md §2, "guard").
 *
 * - Chromium talks to a relay on the renderer's side, never to the guard directly. The relay
 *   adds `Proxy-Authorization: Basic base64("render:<token>")` to each request head (absolute-form
 *   requests and CONNECT), naming the render that owns the connection. `<token>` is a fresh
 *   random value per render with a MAC only a renderer and the guard can make
 *   (lib/render-token.ts), so no render can name, see or change another's count, and a token
 *   nobody made names no render.
 * - The guard refuses with `403` and `x-guard-reason: <reason>` (spec Part 7 `reason` vocabulary).
 * - When an allowed `http:` target cannot be reached, the guard answers the absolute-form request
 *   itself (502, or 504 on a timeout) with `x-guard-failure: <GuardFailure>`, so the renderer
 *   can tell that answer from one the target gave. Both headers are the guard's word alone: the
 *   guard drops them from every answer it forwards from a target.
 * - When a render ends, the renderer asks the guard for that render's tally with an origin-form
 *   `GET /renders/<token>` straight to the guard's listener (not through the proxy); the guard
 *   answers the tally as JSON and forgets it. Pages cannot reach that path: their requests
 *   arrive absolute-form and are judged as targets.
 * - The tally names the requests the guard refused (`refused`), each by a digest of the request
 *   as the guard read it (`refusedRequestName`), never by its URL. That record, not a header on
 *   an answer, is how the renderer knows the guard refused the page's own document: inside a
 *   CONNECT tunnel the target writes every header the renderer sees.
 */
import { createHash } from 'node:crypto';
import type { EgressAuditEntry } from './egress.ts';
import type { RejectReason } from './errors.ts';

export const GUARD_REASON_HEADER = 'x-guard-reason';
export const GUARD_FAILURE_HEADER = 'x-guard-failure';
/** Where the guard answers a render's tally: `RENDER_STATS_PATH + <token>`, origin-form, on its own listener. */
export const RENDER_STATS_PATH = '/renders/';

/** The form of a render token: 16 to 64 base64url characters. */
export const RENDER_TOKEN_FORM = /^[A-Za-z0-9_-]{16,64}$/;

/** Why the guard answered an allowed request itself: the target could not be reached or went quiet. */
export type GuardFailure = 'connect_refused' | 'connect_timeout' | 'reset' | 'idle_timeout' | 'unreachable';

/** One request the guard refused: its `refusedRequestName` and the reason. */
export interface RefusedRequest {
  request: string;
  reason: RejectReason;
}

/** A render's refusal tally, as the guard answers it at `GET /renders/<token>`. */
export interface RenderTally {
  /** Connections and requests the guard refused for this render. */
  blocked: number;
  /** The reason of the first refusal, if any. */
  firstReason: RejectReason | null;
  /**
   * The requests refused, oldest first, each named once; at most REFUSALS_KEPT, the most
   * recent kept (a page's own document is the last thing a failed navigation asked for).
   */
  refused: RefusedRequest[];
  /** For a render opened with its lease: the guard's decisions since the last read (lib/egress.ts). */
  audit?: EgressAuditEntry[];
  /** Decisions past the guard's bound per render, counted but not kept. */
  auditDropped?: number;
  /**
   * Tunnels of this render the guard refused because it was full (GUARD_MAX_TUNNELS): a render
   * that then fails answers 503 `busy`, not metered, as when every slot is taken.
   */
  busy?: number;
}

/** How many refused requests a tally names. */
export const REFUSALS_KEPT = 16;

/** A tally with nothing refused. */
export function emptyTally(): RenderTally {
  return { blocked: 0, firstReason: null, refused: [] };
}

/** Adds `part` (a later read of the same render's tally) to `total`, keeping the bound. */
export function addTally(total: RenderTally, part: RenderTally): void {
  total.blocked += part.blocked;
  total.firstReason ??= part.firstReason;
  for (const r of part.refused) {
    const i = total.refused.findIndex((x) => x.request === r.request);
    if (i !== -1) total.refused.splice(i, 1);
    total.refused.push(r);
  }
  if (total.refused.length > REFUSALS_KEPT) total.refused.splice(0, total.refused.length - REFUSALS_KEPT);
  if (part.audit !== undefined) total.audit = [...(total.audit ?? []), ...part.audit];
  if (part.auditDropped !== undefined) total.auditDropped = (total.auditDropped ?? 0) + part.auditDropped;
  if (part.busy !== undefined) total.busy = (total.busy ?? 0) + part.busy;
}

function digest(text: string): string {
  return createHash('sha256').update(text).digest('base64url').slice(0, 22);
}

/**
 * How the guard names a request it refused, from its request line: a CONNECT by its host and
 * port, anything else by its absolute URL without fragment. Both are put through the WHATWG
 * parser first, so the renderer's `documentRequestName` of the same address gives the same name.
 */
export function refusedRequestName(method: string, target: string): string {
  if (method.toUpperCase() === 'CONNECT') {
    const m = /^(.+):(\d{1,5})$/.exec(target);
    try {
      if (m !== null) return digest(`connect ${new URL(`http://${m[1]}/`).hostname}:${Number(m[2])}`);
    } catch {
      // not a host the parser reads: named as written
    }
    return digest(`connect ${target}`);
  }
  try {
    const url = new URL(target);
    url.hash = '';
    return digest(`url ${url.href}`);
  } catch {
    return digest(`url ${target}`);
  }
}

/**
 * The name the guard gives the request Chromium makes through it for a document at `url`:
 * absolute-form for `http:`, a CONNECT of its host and port for `https:`.
 */
export function documentRequestName(url: string): string {
  const u = new URL(url);
  if (u.protocol === 'http:') return refusedRequestName('GET', url);
  return refusedRequestName('CONNECT', `${u.hostname}:${u.port === '' ? 443 : u.port}`);
}

/** The path at which the guard answers the tally of the render `token` names. */
export function renderStatsPath(token: string): string {
  return RENDER_STATS_PATH + encodeURIComponent(token);
}

/** The render token a request path asks the tally of, or undefined when it asks none. */
export function renderTokenFromPath(path: string): string | undefined {
  if (!path.startsWith(RENDER_STATS_PATH)) return undefined;
  const token = path.slice(RENDER_STATS_PATH.length);
  return RENDER_TOKEN_FORM.test(token) ? token : undefined;
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
  return RENDER_TOKEN_FORM.test(token) ? token : undefined;
}
