/**
 * The spec's error vocabulary (Part 7) as typed values, mapped to an HTTP answer in exactly
 * one place. Codes are a bounded set, so they double as metric labels.
 */

/** `reason` values of a 422 `url_rejected`, in the order the guard gives precedence to them. */
export const REJECT_REASONS = [
  'bad_scheme',
  'credentials_in_url',
  'bad_host',
  'dns_failure',
  'private_address',
  'denied_host',
  // An extension of the spec's vocabulary: the key's egress policy (docs/api.md), judged only
  // after the spec's rules, so it never takes the place of one of theirs.
  'not_allowed_for_key',
] as const;
export type RejectReason = (typeof REJECT_REASONS)[number];

export function isRejectReason(value: unknown): value is RejectReason {
  return typeof value === 'string' && (REJECT_REASONS as readonly string[]).includes(value);
}

/** Every `error` code the service answers with, and its status. */
export const ERROR_STATUS = {
  unauthorized: 401,
  not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  payload_too_large: 413,
  headers_too_large: 431,
  url_rejected: 422,
  rate_limited: 429,
  quota_exceeded: 429,
  concurrent_limit: 429,
  render_failed: 502,
  render_too_large: 502,
  busy: 503,
  guard_unverified: 503,
  render_timeout: 504,
} as const;
export type ErrorCode = keyof typeof ERROR_STATUS;

/** Extra body fields per code (spec Part 7, "Extra fields"). */
export interface ErrorExtras {
  url_rejected: { reason: RejectReason };
  rate_limited: { limit: number; windowSec: number; retryAfterSec: number };
  quota_exceeded: { limit: number; month: string; resetsAt: string };
  concurrent_limit: { limit: number };
}
type Extra<C extends ErrorCode> = C extends keyof ErrorExtras ? ErrorExtras[C] : Record<string, never>;

/** An HTTP answer ready to write: status, headers and a JSON body. */
export interface ErrorAnswer {
  status: number;
  headers: Record<string, string>;
  body: Record<string, unknown>;
}

/** A refusal or failure with a stable code from the spec. Never carries a URL, HTML or key. */
export class ServiceError<C extends ErrorCode = ErrorCode> extends Error {
  override name = 'ServiceError';
  readonly status: number;
  readonly expose = true;

  constructor(
    readonly code: C,
    readonly extra: Extra<C> = {} as Extra<C>,
  ) {
    super(code);
    this.status = ERROR_STATUS[code];
  }

  /** The client answer of spec Part 7: `{ error, ...extra }` and the headers the code carries. */
  answer(): ErrorAnswer {
    const headers: Record<string, string> = { 'content-type': 'application/json; charset=utf-8' };
    if (this.code === 'unauthorized') headers['www-authenticate'] = 'Bearer';
    if (this.code === 'busy') headers['retry-after'] = '1';
    if (this.code === 'rate_limited') {
      headers['retry-after'] = String((this.extra as ErrorExtras['rate_limited']).retryAfterSec);
    }
    return { status: this.status, headers, body: { error: this.code, ...this.extra } };
  }
}

/** One failing field of a validated body or query. `path` is the field's path, e.g. `margin.top`. */
export interface FieldIssue {
  path: string;
  message: string;
}

/** A 400 validator report (spec Part 7): every failing field named by path. */
export class ValidationFailure extends Error {
  override name = 'ValidationFailure';
  readonly status = 400;
  readonly expose = true;

  constructor(readonly issues: readonly FieldIssue[]) {
    super(issues.map((i) => i.message).join('; '));
  }

  answer(): ErrorAnswer {
    return {
      status: 400,
      headers: { 'content-type': 'application/json; charset=utf-8' },
      body: {
        success: false,
        error: {
          name: 'ValidationError',
          message: this.message,
          issues: this.issues.map((i) => ({ path: i.path, message: i.message })),
        },
      },
    };
  }
}

/** Statuses whose answers are metered (spec Part 8 rule 4, docs/architecture.md §2 settle). */
export function isMetered(status: number): boolean {
  return status === 200 || status === 502 || status === 504;
}

/** The client answer for anything thrown: typed errors as themselves, the rest as 502 `render_failed`. */
export function answerFor(err: unknown): ErrorAnswer {
  if (err instanceof ServiceError || err instanceof ValidationFailure) return err.answer();
  return new ServiceError('render_failed').answer();
}
