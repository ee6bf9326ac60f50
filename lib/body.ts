/**
 * The one reader of request bodies, for every role. At most `limit` bytes are ever held, whether
 * the size is announced (`content-length`) or only discovered while a chunked body streams in
 * (spec Part 8); past the limit, bytes are read and dropped so the client can still read its
 * 413. A reader may also bound the time the whole body may take. `drain()` is the one way a role
 * drops a body it will not read.
 */
import type { IncomingMessage } from 'node:http';

export type BodyRead =
  | { kind: 'body'; body: Buffer }
  | { kind: 'too_large' }
  | { kind: 'timeout' }
  /** The client went away before the body was in. */
  | { kind: 'aborted' };

export interface BodyBounds {
  /** Largest body, in bytes. */
  limit: number;
  /** How long the whole body may take once the headers are in; no bound when omitted. */
  timeoutMs?: number;
  /** Count the body and drop it as it arrives: nothing is held, and `body` resolves empty. */
  discard?: boolean;
}

/** Whether the request announces, by `content-length`, a body over `limit`. */
export function announcedTooLarge(req: IncomingMessage, limit: number): boolean {
  const raw = req.headers['content-length'];
  if (raw === undefined) return false;
  const n = Number(raw);
  return !Number.isFinite(n) || n > limit;
}

/**
 * Consumes the rest of a request body and drops it, so the client can read its answer and the
 * connection can carry the next request. With `maxMs`, a body still coming after that long takes
 * its socket with it.
 */
export function drain(req: IncomingMessage, maxMs?: number): void {
  req.resume();
  if (maxMs === undefined || req.complete) return;
  const timer = setTimeout(() => req.socket.destroy(), maxMs).unref();
  req.once('end', () => clearTimeout(timer));
  req.once('close', () => clearTimeout(timer));
}

/**
 * Reads the whole body, holding at most `limit` bytes. Resolves `too_large` as soon as the limit
 * is passed (at once when the announced length passes it), `timeout` when the body is not in
 * within its time, `aborted` when the client goes.
 * After anything but `body` the rest of the stream is dropped as it arrives; the caller decides
 * how long to keep the connection for it (drain()).
 */
export function readBody(req: IncomingMessage, bounds: BodyBounds): Promise<BodyRead> {
  const { limit } = bounds;
  if (announcedTooLarge(req, limit)) {
    drain(req);
    return Promise.resolve({ kind: 'too_large' });
  }
  return new Promise((resolve) => {
    let chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const timer = bounds.timeoutMs === undefined ? undefined : setTimeout(() => finish({ kind: 'timeout' }), bounds.timeoutMs);
    const finish = (r: BodyRead): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (r.kind !== 'body') chunks = [];
      resolve(r);
    };
    req.on('data', (chunk: Buffer) => {
      if (done) return; // refused: dropped, never held
      size += chunk.length;
      if (size > limit) return finish({ kind: 'too_large' });
      if (bounds.discard !== true) chunks.push(chunk);
    });
    req.once('end', () => finish({ kind: 'body', body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks) }));
    req.once('error', () => finish({ kind: 'aborted' }));
    req.once('close', () => {
      if (!req.complete) finish({ kind: 'aborted' });
    });
  });
}
