/**
 * CDP's pipe framing, as Chromium speaks it on `--remote-debugging-pipe`: each message is UTF-8
 * JSON followed by one NUL byte. The launcher and the renderer's socket transport speak it on the
 * unix socket too, so a frame crosses unchanged (docs/architecture.md §3).
 */

/** The byte that ends a frame. */
export const FRAME_END = 0;

/** Thrown by FrameSplitter.push when a frame passes its bound: the stream cannot be trusted after it. */
export class FrameTooLarge extends Error {
  constructor(readonly maxBytes: number) {
    super(`a frame passed ${maxBytes} bytes`);
  }
}

/**
 * Splits a byte stream into frames; a frame may arrive in many chunks, or many in one. A frame
 * longer than `maxBytes` is never held whole: push throws FrameTooLarge once its bytes pass it.
 */
export class FrameSplitter {
  private pending: Buffer[] = [];
  private pendingBytes = 0;

  constructor(private readonly maxBytes = Number.POSITIVE_INFINITY) {}

  /** Bytes held of a frame not yet ended. */
  get held(): number {
    return this.pendingBytes;
  }

  /** The frames `chunk` completes, in order, as strings. */
  push(chunk: Buffer): string[] {
    const out: string[] = [];
    let start = 0;
    let end = chunk.indexOf(FRAME_END);
    while (end !== -1) {
      if (this.pendingBytes + end - start > this.maxBytes) throw new FrameTooLarge(this.maxBytes);
      const piece = chunk.subarray(start, end);
      if (this.pendingBytes > 0) {
        this.pending.push(piece);
        out.push(Buffer.concat(this.pending).toString('utf8'));
        this.pending = [];
        this.pendingBytes = 0;
      } else {
        out.push(piece.toString('utf8'));
      }
      start = end + 1;
      end = chunk.indexOf(FRAME_END, start);
    }
    if (start < chunk.length) {
      if (this.pendingBytes + chunk.length - start > this.maxBytes) throw new FrameTooLarge(this.maxBytes);
      // Copied: the caller's buffer may be reused.
      this.pending.push(Buffer.from(chunk.subarray(start)));
      this.pendingBytes += chunk.length - start;
    }
    return out;
  }
}

/** One frame as bytes on the wire. */
export function frame(message: string): Buffer {
  return Buffer.concat([Buffer.from(message, 'utf8'), Buffer.from([FRAME_END])]);
}

/** The launcher's own messages: never CDP's (CDP has no `Tintype` domain), taken by the renderer's transport. */
export const LAUNCHED = 'Tintype.launched';
export const REFUSED = 'Tintype.refused';
export const MEMORY = 'Tintype.memory';

/** The first frame the renderer sends on a connection. */
export interface LaunchRequest {
  /** Chromium's switches (launcher/switches.ts says which are accepted). */
  args: string[];
}

/** The launcher's first frame when Chromium started. */
export interface Launched {
  /** Chromium's pid as the launcher sees it (meaningful only in the launcher's PID namespace). */
  pid: number;
  /** Whether Chromium runs with its own sandbox; `why` says why not. */
  sandbox: boolean;
  why?: string;
}
