/**
 * JSON request bodies, read by hand so nothing else is accepted silently: the content type
 * must be `application/json` (spec Part 4), the size is bounded before and while reading
 * (spec Part 8: 4,194,304 bytes, 413 `payload_too_large`; lib/body.ts), and a body that is not
 * JSON is a 400.
 */
import type { IncomingMessage } from 'node:http';
import { announcedTooLarge, readBody } from '../../lib/body.ts';
import { ServiceError, ValidationFailure } from '../../lib/errors.ts';
import { MAX_BODY_BYTES } from '../../lib/policy-contract.ts';

function refuse(message: string): ValidationFailure {
  return new ValidationFailure([{ path: 'body', message }]);
}

/** Whether a content-type header names JSON in UTF-8 (the only charset JSON has, RFC 8259 §8.1). */
export function isJsonContentType(header: string | undefined): boolean {
  if (header === undefined) return false;
  const [type, ...params] = header.split(';').map((p) => p.trim().toLowerCase());
  if (type !== 'application/json') return false;
  return params.every((p) => !p.startsWith('charset=') || /^charset="?utf-8"?$/.test(p));
}

/** Reads and parses the request's JSON body. Throws 413 past `limit` bytes, 400 for anything not JSON. */
export async function readJsonBody(req: IncomingMessage, limit = MAX_BODY_BYTES): Promise<unknown> {
  if (announcedTooLarge(req, limit)) throw new ServiceError('payload_too_large');
  if (!isJsonContentType(req.headers['content-type'])) {
    throw refuse('body must be sent with content-type: application/json');
  }
  const read = await readBody(req, { limit });
  if (read.kind === 'too_large') throw new ServiceError('payload_too_large');
  // The client went away: there is nobody to answer (the render's signal is aborted too).
  if (read.kind !== 'body') throw new Error('aborted');
  const text = read.body.toString('utf8');
  if (text.trim() === '') throw refuse('body must be a JSON object');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw refuse('body is not valid JSON');
  }
}
