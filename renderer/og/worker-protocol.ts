/**
 * The messages between the drawing pool and its worker threads (pool.ts): the pool sends one
 * card at a time, the thread answers with the PNG bytes (transferred, not copied) or an error.
 */
import { parentPort } from 'node:worker_threads';
import type { OgCard } from './fields.ts';

/** Pool to thread: draw this card. */
export interface DrawRequest {
  id: number;
  card: OgCard;
}

/** Thread to pool: `ready` once after warming up, then one answer per request. */
export type ThreadMessage =
  | { kind: 'ready' }
  | { kind: 'drawn'; id: number; png: ArrayBuffer; missing?: Record<string, number> }
  | { kind: 'failed'; id: number; message: string };

/**
 * Serves draw requests on this worker thread with `draw` after `warmUp` has run. A thrown error
 * answers that request only; the thread keeps serving. `missing` gives the characters drawn as
 * the empty box since it was last asked, by script; they go back with the card.
 */
export function serveDrawing(warmUp: () => void, draw: (card: OgCard) => Uint8Array, missing?: () => Record<string, number>): void {
  const port = parentPort;
  if (port === null) throw new Error('serveDrawing runs only inside a worker thread');
  warmUp();
  missing?.();
  port.on('message', (request: DrawRequest) => {
    let answer: ThreadMessage;
    const transfer: ArrayBuffer[] = [];
    try {
      const bytes = draw(request.card);
      // Transfer a buffer that holds exactly the PNG. Anything else is copied first: a Buffer's
      // slice() is a view of the same memory (a pooled Buffer's pool, which Node 24 refuses to
      // transfer and Node 20 would detach), so the copy is made as a plain Uint8Array.
      const own = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer
        ? bytes.buffer
        : new Uint8Array(bytes).buffer;
      const counts = missing?.();
      answer = counts === undefined || Object.keys(counts).length === 0
        ? { kind: 'drawn', id: request.id, png: own }
        : { kind: 'drawn', id: request.id, png: own, missing: counts };
      transfer.push(own);
    } catch (err) {
      answer = { kind: 'failed', id: request.id, message: err instanceof Error ? err.message : String(err) };
    }
    port.postMessage(answer, transfer);
  });
  port.postMessage({ kind: 'ready' } satisfies ThreadMessage);
}
