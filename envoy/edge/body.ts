/**
 * The body-size wall of spec Part 5 rule 5 and Part 8: a body over the limit is refused before
 * any key lookup, whether its size is announced (`content-length`) or only discovered while a
 * chunked body streams in. At most `limit` bytes are ever held; past that, bytes are read and
 * dropped so the client can still read its 413 (Envoy's buffer filter behaves the same way).
 * What is held counts against the edge's budget of unauthorized bodies (held.ts), and the whole
 * body must be in within `timeoutMs` of its headers (README "Security").
 */
import type { IncomingMessage } from 'node:http';
import type { HeldBodies } from './held.ts';

export type BodyResult =
  /** `held`: bytes taken from the budget, given back by the caller once the key is checked. */
  | { kind: 'body'; body: Buffer; held: number }
  | { kind: 'too_large' }
  | { kind: 'busy' }
  | { kind: 'timeout' }
  | { kind: 'aborted' };

export interface BodyBounds {
  /** Largest body, in bytes. */
  limit: number;
  /** The edge-wide budget of bodies whose key is not yet checked. */
  budget: HeldBodies;
  /** How long the whole body may take once the headers are in. */
  timeoutMs: number;
}

/** Whether the request announces, by `content-length`, a body over `limit`. */
export function announcedTooLarge(req: IncomingMessage, limit: number): boolean {
  const raw = req.headers['content-length'];
  if (raw === undefined) return false;
  const n = Number(raw);
  return !Number.isFinite(n) || n > limit;
}

/**
 * Reads the whole body, holding at most `limit` bytes. Resolves `too_large` as soon as the
 * limit is passed, `busy` as soon as the budget would be passed (an announced length is taken
 * from the budget before anything is read), `timeout` when the body is not in within its time;
 * the rest of the stream is then the caller's to discard.
 */
export function readBoundedBody(req: IncomingMessage, bounds: BodyBounds): Promise<BodyResult> {
  const { limit, budget } = bounds;
  if (announcedTooLarge(req, limit)) {
    req.resume();
    return Promise.resolve({ kind: 'too_large' });
  }
  const announced = req.headers['content-length'] === undefined ? undefined : Number(req.headers['content-length']);
  let taken = 0;
  if (announced !== undefined) {
    if (!budget.take(announced)) return Promise.resolve({ kind: 'busy' });
    taken = announced;
  }
  return new Promise((resolve) => {
    let chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const timer = setTimeout(() => finish({ kind: 'timeout' }), bounds.timeoutMs);
    const finish = (r: BodyResult): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (r.kind !== 'body') {
        chunks = [];
        budget.give(taken);
        taken = 0;
      }
      resolve(r);
    };
    req.on('data', (chunk: Buffer) => {
      if (done) return; // refused: dropped, never held
      size += chunk.length;
      if (size > limit) return finish({ kind: 'too_large' });
      if (size > taken) {
        if (!budget.take(size - taken)) return finish({ kind: 'busy' });
        taken = size;
      }
      chunks.push(chunk);
    });
    req.once('end', () => finish({ kind: 'body', body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size), held: taken }));
    req.once('error', () => finish({ kind: 'aborted' }));
    req.once('close', () => {
      if (!req.complete) finish({ kind: 'aborted' });
    });
  });
}
