/** A raw HTTP client for edge tests: exact headers, chunked or announced bodies, early aborts. */
import http from 'node:http';

export interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  /** Bytes of the request body written before the answer arrived. */
  sentBeforeAnswer: number;
}

export interface SendOptions {
  port: number;
  method?: string;
  path: string;
  headers?: Record<string, string>;
  /** A body sent with its content-length. */
  body?: Buffer | string;
  /** A body streamed chunked (no content-length): this many bytes in 64 KiB pieces. */
  chunkedBytes?: number;
  /** Stop writing the chunked body as soon as an answer arrives (the request is then abandoned). */
  stopOnAnswer?: boolean;
}

export function send(o: SendOptions): Promise<Answer> {
  return new Promise((resolve, reject) => {
    let sent = 0;
    let answered = false;
    const headers: Record<string, string> = { ...o.headers };
    if (o.body !== undefined) headers['content-length'] = String(Buffer.byteLength(o.body));
    const req = http.request({ host: '127.0.0.1', port: o.port, method: o.method ?? 'GET', path: o.path, headers, agent: false }, (res) => {
      answered = true;
      const chunks: Buffer[] = [];
      const at = sent;
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), sentBeforeAnswer: at }));
      res.on('error', reject);
    });
    req.on('error', (err) => {
      if (!answered) reject(err);
    });
    if (o.chunkedBytes !== undefined) {
      const piece = Buffer.alloc(64 * 1024, 0x61);
      const total = o.chunkedBytes;
      const pump = (): void => {
        while (sent < total) {
          if (answered && o.stopOnAnswer) {
            req.destroy();
            return;
          }
          const n = Math.min(piece.length, total - sent);
          sent += n;
          if (!req.write(n === piece.length ? piece : piece.subarray(0, n))) {
            req.once('drain', pump);
            return;
          }
        }
        req.end();
      };
      pump();
    } else {
      req.end(o.body);
    }
  });
}
