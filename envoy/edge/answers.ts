/** The answers the edge writes itself (Envoy's local replies, mapped to the spec's JSON bodies). */
import type { ServerResponse } from 'node:http';
import { ServiceError } from '../../lib/errors.ts';

export type Headers = Record<string, string>;

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

/** Writes a 404 or 405 for paths outside the API (README, decisions where the spec is silent). */
export function writeNotFound(res: ServerResponse): void {
  writeJson(res, 404, { 'content-type': 'application/json; charset=utf-8' }, { error: 'not_found' });
}

export function writeMethodNotAllowed(res: ServerResponse, allow: string): void {
  writeJson(res, 405, { 'content-type': 'application/json; charset=utf-8', allow }, { error: 'method_not_allowed' });
}
