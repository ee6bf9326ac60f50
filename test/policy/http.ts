/** A plain HTTP client for the tests of policy and of the roles' listeners: status, headers as sent (raw) and body bytes. */
import http from 'node:http';

export interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** Header lines as sent, names lower-cased, without the ones that carry the time or connection state. */
  stableHeaders: string[];
  body: string;
}

const UNSTABLE = new Set(['date', 'connection', 'keep-alive']);

/** One request on a fresh connection, or on `agent`'s kept-alive ones; to 127.0.0.1's `port`, or the unix socket at that path. */
export function request(
  port: number | string,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
  agent: http.Agent | false = false,
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request({ ...(typeof port === 'string' ? { socketPath: port } : { host: '127.0.0.1', port }), method, path, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const stableHeaders: string[] = [];
        for (let i = 0; i < res.rawHeaders.length; i += 2) {
          const name = res.rawHeaders[i]!.toLowerCase();
          if (!UNSTABLE.has(name)) stableHeaders.push(`${name}: ${res.rawHeaders[i + 1]}`);
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, stableHeaders, body: Buffer.concat(chunks).toString('utf8') });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** A client that keeps up to `connections` connections open, as Envoy and renderers do; `always` goes with every request. */
export function pooledClient(port: number, connections: number, always: Readonly<Record<string, string>> = {}) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  return {
    request: (method: string, path: string, headers: Record<string, string> = {}, body?: string) =>
      request(port, method, path, { ...always, ...headers }, body, agent),
    close: () => agent.destroy(),
  };
}
