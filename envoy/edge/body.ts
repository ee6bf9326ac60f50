/**
 * The body-size wall of spec Part 5 rule 5 and Part 8: a body over the limit is refused before
 * any key lookup, whether its size is announced (`content-length`) or only discovered while a
 * chunked body streams in. At most `limit` bytes are ever held; past that, bytes are read and
 * dropped so the client can still read its 413 (Envoy's buffer filter behaves the same way).
 */
import type { IncomingMessage } from 'node:http';

export type BodyResult =
  | { kind: 'body'; body: Buffer }
  | { kind: 'too_large' }
  | { kind: 'aborted' };

/** Whether the request announces, by `content-length`, a body over `limit`. */
export function announcedTooLarge(req: IncomingMessage, limit: number): boolean {
  const raw = req.headers['content-length'];
  if (raw === undefined) return false;
  const n = Number(raw);
  return !Number.isFinite(n) || n > limit;
}

/**
 * Reads the whole body, holding at most `limit` bytes. Resolves `too_large` as soon as the
 * limit is passed; the rest of the stream is then discarded as it arrives.
 */
export function readBoundedBody(req: IncomingMessage, limit: number): Promise<BodyResult> {
  if (announcedTooLarge(req, limit)) {
    req.resume();
    return Promise.resolve({ kind: 'too_large' });
  }
  return new Promise((resolve) => {
    let chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = (r: BodyResult): void => {
      if (done) return;
      done = true;
      resolve(r);
    };
    req.on('data', (chunk: Buffer) => {
      if (done) return; // past the limit: dropped, never held
      size += chunk.length;
      if (size > limit) {
        chunks = [];
        finish({ kind: 'too_large' });
        return;
      }
      chunks.push(chunk);
    });
    req.once('end', () => finish({ kind: 'body', body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size) }));
    req.once('error', () => finish({ kind: 'aborted' }));
    req.once('close', () => {
      if (!req.complete) finish({ kind: 'aborted' });
    });
  });
}
