/**
 * The one writer of JSON answers outside Koa: the edge's own answers (Envoy's local replies in
 * the cluster) and every admin listener's. Error bodies come from lib/errors.ts, so a code has
 * one body wherever it is answered.
 */
import type { ServerResponse } from 'node:http';
import { ServiceError } from './errors.ts';

export type Headers = Record<string, string>;

const JSON_TYPE = { 'content-type': 'application/json; charset=utf-8' };

/** Writes a JSON answer with its headers; `extra` headers (the rate-limit position) are added. */
export function writeJson(res: ServerResponse, status: number, headers: Headers, body: unknown, extra: Headers = {}): void {
  const payload = Buffer.from(JSON.stringify(body));
  res.writeHead(status, { ...headers, ...extra, 'content-length': String(payload.length) });
  res.end(payload);
}

/** Writes the spec answer of a ServiceError code. */
export function writeError(res: ServerResponse, error: ServiceError, extra: Headers = {}): void {
  const a = error.answer();
  writeJson(res, a.status, a.headers, a.body, extra);
}

/** Writes a 404 or 405 for paths outside the API (docs/decisions.md). */
export function writeNotFound(res: ServerResponse): void {
  writeError(res, new ServiceError('not_found'));
}

export function writeMethodNotAllowed(res: ServerResponse, allow: string): void {
  writeError(res, new ServiceError('method_not_allowed'), { allow });
}

/** Writes a JSON body that is not an error (probes, reports). */
export function writeBody(res: ServerResponse, status: number, body: unknown): void {
  writeJson(res, status, { ...JSON_TYPE, 'cache-control': 'no-store' }, body);
}
